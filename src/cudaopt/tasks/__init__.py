from cudaopt.tasks.loader import (  # noqa: F401
    CORPUS_DIR,
    SUITE_DIR,
    Task,
    TaskError,
    builtin_tasks,
    discover_tasks,
    find_builtin,
    load_task,
    resolve_task,
)
