#!/usr/bin/env bash
# Start a throw-away PostgreSQL server on 127.0.0.1 for the database tests and print the
# `export CUDAOPT_TEST_PG_URL=...` line to eval. Installs Debian's postgresql when it is missing.
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) 1>&2
fi
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
DATA=$(mktemp -d /tmp/cudaopt-pg-XXXXXX)
PORT=${CUDAOPT_PG_PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
chown postgres "$DATA"
su postgres -c "$BIN/initdb -D $DATA -A trust -U postgres" >/dev/null
su postgres -c "$BIN/pg_ctl -D $DATA -o '-p $PORT -k $DATA -c listen_addresses=127.0.0.1' -l $DATA/log -w start" >/dev/null
su postgres -c "$BIN/createdb -h 127.0.0.1 -p $PORT -U postgres cudaopt_test"
echo "export CUDAOPT_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:$PORT/cudaopt_test"
