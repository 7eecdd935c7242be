"""Static guards: read a candidate's source before it is compiled or imported, and report what it must not do.

`scan(source)` parses the Python with `ast`, resolves import aliases and simple obfuscation (names built by
string concatenation, `getattr`/`setattr` with computed names, `importlib.import_module`, `__import__`,
`exec` of a constant string), and runs light regular expressions over the C++/CUDA text embedded in string
constants. It never imports or runs the candidate. Findings whose message starts with "hint: " are only
suspicious (see `cudaopt.guards.findings.is_hint`): they are reported, never a reason to reject on their own.

What this layer cannot see (code built from bytes at run time, C preprocessor tricks, what a kernel does)
is the dynamic layer's job; docs/hacking.md lists both.
"""

from __future__ import annotations

import ast
import re
import sys

from cudaopt.guards.findings import HINT_PREFIX, Finding

_EVIDENCE_CHARS = 160
# Names a KernelBench reference uses for its problem sizes; a candidate reading its own copy of one of them
# inside forward computes a different problem from the one it is given.
SIZE_NAMES = frozenset(
    "batch_size batch in_features out_features in_channels out_channels features num_features dim dim1 dim2 "
    "N M K seq_len hidden_size hidden_dim input_size output_size num_classes height width channels length "
    "rows cols depth kernel_size".split()
)
# Third-party modules an honest candidate may import; anything else outside the standard library could be
# the reference module or a helper that the sandbox does not know.
_ALLOWED_THIRD_PARTY = frozenset({"torch", "numpy", "triton", "einops", "typing_extensions", "__future__"})
# Build-time environment variables a candidate may set (they only steer its own extension build).
_ALLOWED_ENV_WRITES = frozenset({"TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "TORCH_EXTENSIONS_DIR", "CXX", "CC"})

# Attribute names that carry the clock, events or synchronisation; assigning one of them is timer tampering.
_TIMER_ATTRS = frozenset(
    "synchronize elapsed_time record perf_counter perf_counter_ns time time_ns monotonic monotonic_ns "
    "process_time Event query wait_event wait_stream current_stream default_stream".split()
)
_PRECISION_ATTRS = frozenset(
    "allow_tf32 allow_fp16_reduced_precision_reduction allow_bf16_reduced_precision_reduction fp32_precision "
    "allow_fp16_bf16_reduction_math_sdp".split()
)
# Module roots whose attributes the harness relies on; a candidate writing to them changes the harness.
_PROTECTED_ROOTS = ("torch", "time", "cudaopt", "builtins", "sys", "os", "gc", "numpy", "threading", "importlib")
_FRAME_ATTRS = frozenset("f_back f_globals f_locals f_builtins tb_frame gi_frame cr_frame ag_frame".split())
_NAMESPACE_ATTRS = frozenset("__globals__ __subclasses__ __closure__ __builtins__".split())
# Methods whose result shares storage with the receiver: an in-place op on it writes into the receiver.
_VIEW_METHODS = frozenset("view view_as reshape narrow select t transpose permute squeeze unsqueeze expand "
                          "expand_as as_strided detach contiguous flatten unflatten diagonal unfold split chunk".split())
_REDUCED_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})

# Dotted call targets -> (category, why). A key ending in "." matches every name under that prefix.
_CALLS: dict[str, tuple[str, str]] = {
    # side streams and threads
    "torch.cuda.Stream": ("side_stream", "creates a CUDA stream; work on it can finish after the timed window"),
    "torch.cuda.ExternalStream": ("side_stream", "wraps a raw CUDA stream; work on it can escape the timed window"),
    "torch.cuda.stream": ("side_stream", "switches to another CUDA stream; work on it can escape the timed window"),
    "torch.cuda.set_stream": ("side_stream", "switches the current CUDA stream away from the harness's"),
    "torch.cuda.streams.": ("side_stream", "uses torch.cuda.streams directly"),
    "torch.cuda.StreamContext": ("side_stream", "switches to another CUDA stream"),
    "torch.Stream": ("side_stream", "creates a device stream; work on it can escape the timed window"),
    "torch.cuda.default_stream": ("side_stream", "launches on the default stream, not the harness's current stream"),
    "threading.": ("side_stream", "starts threads; their work can finish after the timed window"),
    "_thread.": ("side_stream", "starts threads; their work can finish after the timed window"),
    "concurrent.futures.": ("side_stream", "runs work in a pool; it can finish after the timed window"),
    "asyncio.": ("side_stream", "runs work in an event loop outside the timed call"),
    "multiprocessing.": ("side_stream", "runs work in other processes, outside the timed window"),
    "torch.multiprocessing.": ("side_stream", "runs work in other processes, outside the timed window"),
    # timer tampering
    "sys.settrace": ("timer_tamper", "installs a trace function that sees (and can alter) the harness"),
    "sys.setprofile": ("timer_tamper", "installs a profile hook that sees (and can alter) the harness"),
    "threading.settrace": ("timer_tamper", "installs a trace function in every thread"),
    "threading.setprofile": ("timer_tamper", "installs a profile hook in every thread"),
    "sys.addaudithook": ("timer_tamper", "installs an audit hook that watches the harness"),
    "sys.setswitchinterval": ("timer_tamper", "changes the interpreter's thread switching for the harness too"),
    "sys.monitoring.": ("timer_tamper", "uses sys.monitoring to watch or alter the harness"),
    "unittest.mock.": ("timer_tamper", "uses mock patching, which can replace the harness's functions"),
    "torch.library.": ("timer_tamper", "registers operator implementations that the reference would also use"),
    "importlib.reload": ("timer_tamper", "reloads a module the harness relies on"),
    "os.putenv": ("timer_tamper", "changes the environment the harness and the reference run in"),
    # reading what it must not read
    "gc.get_objects": ("reference_peek", "scans every live object (the reference's outputs among them)"),
    "gc.get_referrers": ("reference_peek", "walks the object graph to reach the harness's objects"),
    "gc.get_referents": ("reference_peek", "walks the object graph to reach the harness's objects"),
    "sys._getframe": ("reference_peek", "reads the caller's frame (the harness's locals)"),
    "sys._current_frames": ("reference_peek", "reads other threads' frames"),
    # PEP 523: a frame-evaluation callback is handed every frame the interpreter runs, with no audit event
    "torch._C._dynamo.": ("reference_peek", "uses Dynamo's frame-evaluation hooks, which hand Python code every frame run"),
    "torch._dynamo.eval_frame.set_eval_frame": ("reference_peek", "installs a frame-evaluation callback that sees every frame run"),
    "inspect.stack": ("reference_peek", "reads the call stack (the harness's locals)"),
    "inspect.currentframe": ("reference_peek", "reads the current frame and, through it, the harness's"),
    "inspect.getouterframes": ("reference_peek", "reads the caller's frames"),
    "inspect.trace": ("reference_peek", "reads frames of the current exception"),
    "traceback.extract_stack": ("reference_peek", "reads the call stack"),
    "traceback.walk_stack": ("reference_peek", "walks the caller's frames"),
    "os.getenv": ("reference_peek", "reads the environment the harness runs in"),
    "os.environ.get": ("reference_peek", "reads the environment the harness runs in"),
    "os.listdir": ("reference_peek", "lists folders outside its own code"),
    "os.scandir": ("reference_peek", "lists folders outside its own code"),
    "os.walk": ("reference_peek", "lists folders outside its own code"),
    "os.read": ("reference_peek", "reads a file descriptor"),
    "os.open": ("reference_peek", "opens a file descriptor"),
    "glob.": ("reference_peek", "lists files outside its own code"),
    "pickle.load": ("reference_peek", "loads a pickle (saved results?)"),
    "pickle.loads": ("reference_peek", "unpickles data (saved results?)"),
    "torch.load": ("reference_peek", "loads saved tensors (saved results?)"),
    "numpy.load": ("reference_peek", "loads saved arrays (saved results?)"),
    "numpy.fromfile": ("reference_peek", "reads raw data from a file"),
    "torch.from_file": ("reference_peek", "maps a file's raw data into a tensor (saved results?)"),
    "multiprocessing.shared_memory.": ("reference_peek", "opens shared memory (the judge's results?)"),
    "mmap.": ("reference_peek", "maps memory or files of other processes"),
    "io.open": ("reference_peek", "opens a file"),
    # The caching allocator's view: every live block's address, the harness's outputs among them, and a
    # tensor made of any such address. No kernel needs them. (Raw allocations are left alone: they hand
    # out what torch.empty hands out.)
    "torch.cuda.memory_snapshot": ("reference_peek", "lists every allocated device block (the harness's outputs among them)"),
    "torch.cuda.memory._snapshot": ("reference_peek", "lists every allocated device block (the harness's outputs among them)"),
    "torch.cuda.memory._record_memory_history": ("reference_peek", "records every allocation the harness makes"),
    "torch._C._cuda_memorySnapshot": ("reference_peek", "lists every allocated device block (the harness's outputs among them)"),
    "torch._C._construct_storage_from_data_pointer": ("reference_peek", "makes a tensor of a raw device address"),
    # leaving the sandbox
    "subprocess.": ("process_escape", "spawns a process"),
    "os.system": ("process_escape", "runs a shell command"),
    "os.popen": ("process_escape", "runs a shell command"),
    "os.fork": ("process_escape", "forks the process"),
    "os.forkpty": ("process_escape", "forks the process"),
    "os.kill": ("process_escape", "sends signals to processes"),
    "os.killpg": ("process_escape", "sends signals to process groups"),
    "os._exit": ("process_escape", "kills the worker without a result"),
    "os.remove": ("process_escape", "deletes files"),
    "os.unlink": ("process_escape", "deletes files"),
    "os.rmdir": ("process_escape", "deletes folders"),
    "os.removedirs": ("process_escape", "deletes folders"),
    "os.rename": ("process_escape", "moves files"),
    "os.replace": ("process_escape", "moves files"),
    "os.chmod": ("process_escape", "changes file permissions"),
    "os.chown": ("process_escape", "changes file owners"),
    "os.symlink": ("process_escape", "creates links in the file system"),
    "os.link": ("process_escape", "creates links in the file system"),
    "os.truncate": ("process_escape", "truncates files"),
    "os.write": ("process_escape", "writes to a file descriptor"),
    "shutil.rmtree": ("process_escape", "deletes folder trees"),
    "shutil.move": ("process_escape", "moves files"),
    "shutil.copy": ("process_escape", "copies files"),
    "shutil.copyfile": ("process_escape", "copies files"),
    "shutil.copytree": ("process_escape", "copies folder trees"),
    "socket.": ("process_escape", "opens a network socket"),
    "urllib.": ("process_escape", "uses the network"),
    "http.": ("process_escape", "uses the network"),
    "requests.": ("process_escape", "uses the network"),
    "httpx.": ("process_escape", "uses the network"),
    "ftplib.": ("process_escape", "uses the network"),
    "smtplib.": ("process_escape", "uses the network"),
    "ctypes.": ("process_escape", "loads native libraries or pokes memory through ctypes"),
    "cffi.": ("process_escape", "loads native libraries through cffi"),
    "pty.": ("process_escape", "spawns a pseudo-terminal process"),
    "signal.": ("process_escape", "installs signal handlers or sends signals (the harness's timeouts use them)"),
    "resource.setrlimit": ("process_escape", "changes the process's resource limits"),
    "base64.": ("process_escape", "decodes hidden text at run time (obfuscation the static checks cannot read)"),
    "codecs.decode": ("process_escape", "decodes hidden text at run time (obfuscation)"),
    "zlib.decompress": ("process_escape", "decompresses hidden data at run time (obfuscation)"),
    "marshal.loads": ("process_escape", "loads hidden code objects at run time (obfuscation)"),
    # precision
    "torch.autocast": ("precision_downgrade", "computes in reduced precision under autocast"),
    "torch.amp.autocast": ("precision_downgrade", "computes in reduced precision under autocast"),
    "torch.cuda.amp.autocast": ("precision_downgrade", "computes in reduced precision under autocast"),
    "torch.cpu.amp.autocast": ("precision_downgrade", "computes in reduced precision under autocast"),
    # the harness's random generator
    "torch.manual_seed": ("input_exploit", "sets the random generator the harness draws inputs from"),
    "torch.seed": ("input_exploit", "reseeds the random generator the harness draws inputs from"),
    "torch.set_rng_state": ("input_exploit", "sets the harness's random generator state (predictable inputs)"),
    "torch.get_rng_state": ("input_exploit", "reads the harness's random generator state (predicts the next inputs)"),
    "torch.random.": ("input_exploit", "reads or sets the harness's random generator"),
    "torch.cuda.manual_seed": ("input_exploit", "sets the random generator the harness draws inputs from"),
    "torch.cuda.manual_seed_all": ("input_exploit", "sets the random generator the harness draws inputs from"),
    "torch.cuda.set_rng_state": ("input_exploit", "sets the harness's random generator state"),
    "torch.cuda.get_rng_state": ("input_exploit", "reads the harness's random generator state"),
    "torch.initial_seed": ("input_exploit", "reads the seed the harness drew the inputs with (predicts them)"),
    "torch.cuda.initial_seed": ("input_exploit", "reads the seed the harness drew the inputs with (predicts them)"),
    "torch.default_generator": ("input_exploit", "reads or sets the harness's random generator"),
    "torch.cuda.default_generators": ("input_exploit", "reads or sets the harness's random generators"),
    "numpy.random.seed": ("input_exploit", "sets a random generator the harness may use"),
    "random.seed": ("input_exploit", "sets a random generator the harness may use"),
    "random.setstate": ("input_exploit", "sets a random generator the harness may use"),
    # caches
    "functools.lru_cache": ("result_cache", "memoises results"),
    "functools.cache": ("result_cache", "memoises results"),
    "weakref.WeakKeyDictionary": ("result_cache", "keeps a table keyed on objects (inputs?)"),
    "weakref.WeakValueDictionary": ("result_cache", "keeps a table of objects across calls"),
    "id": ("result_cache", "uses an object's id, which identifies a buffer, not its contents"),
    "hash": ("result_cache", "hashes an object; a tensor hashes by identity, not contents"),
    # lazy outputs
    "torch.Tensor._make_subclass": ("lazy_output", "builds a tensor subclass (a proxy, not a plain tensor)"),
    "torch.Tensor._make_wrapper_subclass": ("lazy_output", "builds a wrapper tensor subclass without real storage"),
    "torch.utils._python_dispatch.": ("lazy_output", "intercepts torch operations (dispatch modes)"),
    "torch._subclasses.": ("lazy_output", "uses fake or functional tensor subclasses"),
    "torch.overrides.": ("lazy_output", "intercepts torch functions"),
    "contextlib.suppress": ("exception_fallback", "silences exceptions, hiding a failing fast path"),
}
# Dotted call targets matched by how their name starts (families of functions, not module prefixes).
_CALL_PREFIXES: dict[str, tuple[str, str]] = {
    "torch._C._dispatch_": ("timer_tamper", "changes the operator dispatcher, which the reference's ops also go through"),
    # hooks on every nn.Module: the reference's modules run them too (a hook that redid their work read 3.96x)
    "torch.nn.modules.module.register_module_": ("timer_tamper", "installs a hook on every nn.Module, the reference's among them"),
}
# Calls that empty or reshape the caching allocator. Inside a function other than __init__ (a forward, or
# a helper it calls) they leave the reference's next allocations to cudaMalloc while the candidate's
# come from what it kept; once at import or construction they bias nothing. (Not measured on a GPU.)
_ALLOCATOR_CALLS: dict[str, tuple[str, str]] = {
    name: ("timer_tamper", "empties or reconfigures the caching allocator between calls (the reference's next "
                           "allocations then go to cudaMalloc)")
    for name in ("torch.cuda.empty_cache", "torch.cuda.memory.empty_cache", "torch._C._cuda_emptyCache",
                 "torch.cuda.memory._set_allocator_settings", "torch._C._cuda_cudaCachingAllocator_set_allocator_settings",
                 "torch.cuda.set_per_process_memory_fraction", "torch.cuda.memory.set_per_process_memory_fraction")
}
# Method names checked on any object: (category, why).
_METHODS: dict[str, tuple[str, str]] = {
    "data_ptr": ("result_cache", "reads a buffer address; answers keyed on it go stale when contents change"),
    "untyped_storage": ("result_cache", "reads the storage object; answers keyed on it go stale"),
    "storage": ("result_cache", "reads the storage object; answers keyed on it go stale"),
    "_make_subclass": ("lazy_output", "builds a tensor subclass (a proxy, not a plain tensor)"),
    "_make_wrapper_subclass": ("lazy_output", "builds a wrapper tensor subclass without real storage"),
    "as_subclass": ("lazy_output", "turns a tensor into a subclass (a proxy, not a plain tensor)"),
    "read_text": ("reference_peek", "reads a file"),
    "read_bytes": ("reference_peek", "reads a file"),
    "write_text": ("process_escape", "writes a file"),
    "write_bytes": ("process_escape", "writes a file"),
    "tofile": ("process_escape", "writes an array to a file (C-level, invisible to Python audit hooks)"),
    "half": ("precision_downgrade", "converts to float16 in an fp32 task"),
    "bfloat16": ("precision_downgrade", "converts to bfloat16 in an fp32 task"),
}
_IMPORTS: dict[str, tuple[str, str]] = {
    "cudaopt": ("timer_tamper", "imports the evaluator, whose clock and checks it could replace"),
    "subprocess": ("process_escape", "imports subprocess"),
    "socket": ("process_escape", "imports socket (network)"),
    "ctypes": ("process_escape", "imports ctypes (native calls outside the sandbox)"),
    "cffi": ("process_escape", "imports cffi (native calls outside the sandbox)"),
    "urllib": ("process_escape", "imports urllib (network)"),
    "http": ("process_escape", "imports http (network)"),
    "requests": ("process_escape", "imports requests (network)"),
    "httpx": ("process_escape", "imports httpx (network)"),
    "pty": ("process_escape", "imports pty (processes)"),
    "threading": ("side_stream", "imports threading; thread work can finish after the timed window"),
    "_thread": ("side_stream", "imports _thread; thread work can finish after the timed window"),
    "concurrent": ("side_stream", "imports concurrent.futures; pool work can finish after the timed window"),
    "multiprocessing": ("side_stream", "imports multiprocessing; work in other processes escapes timing"),
    "asyncio": ("side_stream", "imports asyncio; work can run outside the timed call"),
    "unittest": ("timer_tamper", "imports unittest (mock patching of the harness)"),
    "pickle": ("reference_peek", "imports pickle (loading saved results)"),
    "marshal": ("process_escape", "imports marshal (hidden code objects)"),
    "mmap": ("reference_peek", "imports mmap (other processes' memory)"),
}

_OPERATOR_OVERRIDE = "embedded code registers kernels for torch's own operators (the reference's ops would run them)"
# Regular expressions over embedded C++/CUDA: (pattern, category, why, hint?, only when the task is fp32?)
_EMBEDDED: list[tuple[re.Pattern, str, str, bool, bool]] = [
    (re.compile(p), c, w, h, f)
    for p, c, w, h, f in [
        (r"\bcu(?:da)?StreamCreate\w*\s*\(", "side_stream", "embedded code creates its own CUDA stream", False, False),
        (r"\bcudaLaunchHostFunc\b|\bcudaStreamAddCallback\b", "side_stream", "embedded code queues host callbacks", False, False),
        (r"\bgetStreamFromPool\b", "side_stream", "embedded code takes a stream from the pool, not the current one", False, False),
        (r"\bcudaStreamPerThread\b|\bcudaStreamNonBlocking\b", "side_stream", "embedded code launches on a stream other than the current one", False, False),
        (r"\bstd::thread\b|\bpthread_create\b|\bstd::async\b", "side_stream", "embedded code starts threads", False, False),
        (r"(?<![\w:.])(?:std::)?system\s*\(", "process_escape", "embedded code runs a shell command", False, False),
        (r"\bpopen\s*\(|\bfork\s*\(|\bexecv\w*\s*\(|\bexecl\w*\s*\(", "process_escape", "embedded code spawns processes", False, False),
        (r"(?<![\w.])socket\s*\(|\bconnect\s*\(\s*\w+\s*,\s*\(", "process_escape", "embedded code opens sockets", False, False),
        (r"\bdlopen\s*\(|\bdlsym\s*\(|\bRTLD_NEXT\b", "process_escape", "embedded code loads or interposes native symbols", False, False),
        (r"\bPyRun_\w+|\bPyImport_\w+|\bpy::exec\b|\bpy::eval\b", "process_escape", "embedded code runs Python the static checks cannot see", False, False),
        (r"__attribute__\s*\(\(\s*constructor", "process_escape", "embedded code runs when the library loads", False, False),
        (r"\bunlink\s*\(|\bstd::ofstream\b|\bfopen\s*\([^)]*\"[wa]", "process_escape", "embedded code writes or deletes files", False, False),
        (r"\bgetenv\s*\(|\bstd::ifstream\b|\bfopen\s*\(|\bshm_open\b|\bmmap\s*\(|/proc/|/dev/shm", "reference_peek", "embedded code reads files, shared memory or the environment", False, False),
        (r"\bpy::module_?::import\s*\(", "reference_peek", "embedded code imports Python modules", False, False),
        (r"\bCUDACachingAllocator::snapshot\b", "reference_peek",
         "embedded code reads the caching allocator's blocks (the harness's outputs among them)", False, False),
        (r"^\s*(?:extern\s+\"C\"\s+)?(?:__host__\s+)?(?:cudaError_t|CUresult)\s+(?:cuda|cu)[A-Z]\w*\s*\([^;]*$",
         "timer_tamper", "embedded code defines a CUDA API function (symbol interposition on the harness's clock)", False, False),
        (r"\btorch::Library\s*\(|\bc10::Dispatcher\b|\bDispatcher::singleton\b|\bRegisterOperators\b",
         "timer_tamper", _OPERATOR_OVERRIDE, False, False),
        (r"\bcudaAccessPolicyWindow\b|\baccessPolicyWindow\b|\bcudaLimitPersistingL2CacheSize\b|\bcudaAccessPropertyPersisting\b|\bcudaCtxResetPersistingL2Cache\b",
         "cache_state", "embedded code sets an L2 persistence window that carries data between timed rounds", False, False),
        (r"\bstatic\s+(?:torch::Tensor|at::Tensor|std::(?:unordered_)?map)\b", "result_cache", "embedded code keeps tensors or tables between calls", False, False),
        (r"^\s*__device__\s+(?:volatile\s+)?(?:unsigned\s+)?(?:int|long|long long|int64_t|uint32_t|unsigned)\s+\w+\s*(?:=|;)",
         "result_cache", "embedded code keeps a device-global counter that survives between calls", True, False),
        (r"\b__half2?\b|\bhalf2\b|\b__nv_bfloat16\w*|\bwmma::|\bmma\.sync\b|__float2half\w*|precision::tf32|__float_to_tf32|cvt\.rna\.tf32",
         "precision_downgrade", "embedded code computes in fp16/bf16/tf32 while the task is fp32", True, True),
        (r"\batomicAdd(?:_block|_system)?\s*\(|\bred\.global\.add\.f32\b", "nondeterminism",
         "embedded code accumulates with atomics; float results then depend on ordering", True, False),
    ]
]
_CUSTOM_KERNEL_RE = re.compile(r"__global__|\.entry\s+\w+|\bextern\s+\"C\"\s+__global__")
_LAUNCH_BOUNDS_RE = re.compile(r"__launch_bounds__\s*\([^)]*\)")
# After __global__: optional qualifiers, the return type (void), then the kernel's name and its "(".
_KERNEL_NAME_RE = re.compile(r"__global__\s+(?:(?:static|inline|__noinline__|__forceinline__)\s+)*void\s+(\w+)\s*\(")


def kernel_names(source: str) -> set[str]:
    """Names of the __global__ kernels a source defines (__launch_bounds__ may stand anywhere)."""
    return set(_KERNEL_NAME_RE.findall(_LAUNCH_BOUNDS_RE.sub(" ", source)))
# Strings assembled from pieces (concatenation, join, reversal) that spell a sensitive name: obfuscation.
_SENSITIVE_STRINGS: dict[str, str] = {
    **{n: "process_escape" for n in "subprocess system popen socket ctypes fork spawn Popen check_output".split()},
    **{n: "timer_tamper" for n in "settrace setprofile perf_counter perf_counter_ns synchronize elapsed_time Event cudaopt monotonic".split()},
    **{n: "side_stream" for n in "Stream ExternalStream threading Thread stream set_stream".split()},
    **{n: "reference_peek" for n in "get_objects get_referrers _getframe f_back f_globals f_locals environ modules gc inspect set_eval_frame".split()},
    **{n: "precision_downgrade" for n in "allow_tf32 set_float32_matmul_precision float16 bfloat16 half".split()},
    **{n: "result_cache" for n in "data_ptr _version untyped_storage".split()},
    **{n: "lazy_output" for n in "_make_subclass __torch_function__ __torch_dispatch__ Tensor".split()},
    **{n: "reference_inherit" for n in ("Model",)},
}
# Modules whose dotted names, assembled from pieces, reveal an import the source hides.
_SENSITIVE_MODULES = {"cudaopt": "timer_tamper", "subprocess": "process_escape", "socket": "process_escape",
                      "ctypes": "process_escape", "threading": "side_stream", "gc": "reference_peek",
                      "inspect": "reference_peek", "multiprocessing": "side_stream"}


def scan(source: str, *, device: str = "cuda", reference: str | None = None) -> list[Finding]:
    """Return what the candidate's source shows it does that a fair measurement forbids.

    `device` is the device the candidate is evaluated on ("cpu" disables GPU-only checks); `reference`, when
    given, is the task's source: it tells the task's dtype and the names of its size globals.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []  # the loader reports syntax errors; there is nothing to scan
    task_fp32, ref_sizes = _reference_facts(reference)
    scanner = _Scanner(source, device=str(device), task_fp32=task_fp32, size_names=SIZE_NAMES | ref_sizes)
    scanner.scan_tree(tree)
    return scanner.findings


def _reference_facts(reference: str | None) -> tuple[bool, frozenset]:
    if not reference:
        return True, frozenset()  # KernelBench tasks are fp32 unless they say otherwise
    fp32 = not re.search(r"float16|bfloat16|\bhalf\b|\.half\(\)", reference)
    names = set()
    try:
        for node in ast.parse(reference).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float)):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    except SyntaxError:
        pass
    return fp32, frozenset(names)


class _Func:
    """What the scanner knows about the function it is inside."""

    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, in_class: str | None):
        self.node = node
        self.in_class = in_class
        self.is_forward = in_class is not None and node.name in ("forward", "__call__")
        self.args = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs} - {"self", "cls"}
        self.locals = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.globals = {g for n in ast.walk(node) if isinstance(n, ast.Global) for g in n.names}
        self.compared = {ast.dump(c) for n in ast.walk(node) if isinstance(n, ast.Compare) for c in [n.left, *n.comparators]}


class _Scanner(ast.NodeVisitor):
    def __init__(self, source: str, *, device: str, task_fp32: bool, size_names: frozenset,
                 aliases: dict | None = None, prefix: str = ""):
        self.source = source
        self.lines = source.splitlines()
        # operator namespaces the file declares itself (TORCH_LIBRARY), read once for every embedded string
        self.declared_libraries = set(_LIBRARY_DEF_RE.findall(_strip_c_comments(source)))
        self.device = device
        self.task_fp32 = task_fp32
        self.size_names = size_names
        self.aliases: dict[str, str] = dict(aliases or {})
        self.prefix = prefix  # "exec: " for code found inside exec'd strings
        self.findings: list[Finding] = []
        self._seen: set[tuple[str, str]] = set()
        self.strings: dict[str, str] = {}  # names bound once to a constant string (for folding)
        self.module_numbers: set[str] = set()  # module globals bound to numbers
        self.local_classes: dict[str, ast.ClassDef] = {}
        self.funcs: list[_Func] = []
        self.classes: list[str] = []
        self.custom_kernel = False
        self.dynamic_roots: set[str] = set()  # modules reached through import_module/__import__

    # -- reporting ---------------------------------------------------------------------------------------
    def add(self, category: str, message: str, where: ast.AST | str, hint: bool = False) -> None:
        evidence = where if isinstance(where, str) else self._line(where)
        evidence = self.prefix + " ".join(evidence.split())[:_EVIDENCE_CHARS]
        key = (category, evidence)
        if key in self._seen:
            return
        self._seen.add(key)
        self.findings.append(Finding(category, (HINT_PREFIX if hint else "") + message, evidence, "static"))

    def _line(self, node: ast.AST) -> str:
        n = getattr(node, "lineno", 0)
        return self.lines[n - 1].strip() if 0 < n <= len(self.lines) else ast.unparse(node)[:_EVIDENCE_CHARS]

    # -- entry -------------------------------------------------------------------------------------------
    def scan_tree(self, tree: ast.Module) -> None:
        self._prepass(tree)
        self.visit(tree)
        self._scan_embedded(tree)
        if self.device.startswith("cuda") and not self.prefix and not self.custom_kernel:
            self.add("no_custom_kernel", "a CUDA candidate with no load_inline/cpp_extension, __global__ kernel or "
                     "triton.jit: it runs only library kernels", "(whole file)")

    def _prepass(self, tree: ast.Module) -> None:
        counts: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._bind_import(node)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                counts[node.targets[0].id] = counts.get(node.targets[0].id, 0) + 1
            elif isinstance(node, ast.ClassDef):
                self.local_classes[node.name] = node
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, (int, float)):
                self.module_numbers.update(t.id for t in node.targets if isinstance(t, ast.Name))
        # Two rounds so a name built from other names folds too; aliases of modules follow assignments.
        for _ in range(2):
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    name = node.targets[0].id
                    if counts.get(name) != 1:
                        continue
                    s = self.fold(node.value)
                    if s is not None:
                        self.strings[name] = s
                    dotted = self.dotted(node.value)
                    if dotted and dotted.split(".")[0] in self._module_roots():
                        self.aliases[name] = dotted

    def _module_roots(self) -> set[str]:
        roots = {v.split(".")[0] for v in self.aliases.values()}
        return roots | {"torch", "os", "sys", "time", "gc", "inspect", "builtins", "cudaopt", "subprocess", "socket", "ctypes"}

    def _bind_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif node.module and not node.level:
            for a in node.names:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    # -- name resolution and folding -----------------------------------------------------------------------
    def dotted(self, node: ast.AST) -> str | None:
        """`torch.cuda.Stream`, through aliases, getattr with a constant name and import_module(constant)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            fn = self.dotted(node.func)
            if fn in ("getattr", "builtins.getattr") and len(node.args) >= 2:
                base, name = self.dotted(node.args[0]), self.fold(node.args[1])
                return f"{base}.{name}" if base and name else None
            if fn in ("importlib.import_module", "__import__", "builtins.__import__") and node.args:
                mod = self.fold(node.args[0])
                if mod:
                    self.dynamic_roots.add(mod.split(".")[0])
                return mod
            if fn in ("vars", "builtins.vars") and node.args:
                return self.dotted(node.args[0])
        if isinstance(node, ast.Subscript):  # sys.modules["time"], vars(time)["perf_counter"]
            base = self.dotted(node.value)
            key = self.fold(node.slice)
            if base in ("sys.modules",) and key:
                return key
            if base and key and (base.endswith(".__dict__")):
                return f"{base[: -len('.__dict__')]}.{key}"
        return None

    def fold(self, node: ast.AST | None) -> str | None:
        """The constant string an expression always evaluates to, or None."""
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):
            return self.strings.get(node.id)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                s = self.fold(v.value if isinstance(v, ast.FormattedValue) else v)
                if s is None:
                    return None
                parts.append(s)
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.fold(node.left), self.fold(node.right)
            return a + b if a is not None and b is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            a = self.fold(node.left)
            vals = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            args = [self.fold(v) for v in vals]
            if a is not None and None not in args:
                try:
                    return a % tuple(args)
                except (TypeError, ValueError):
                    return None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            s = self.fold(node.value)
            sl = node.slice
            bounds = [None if x is None else (x.value if isinstance(x, ast.Constant) and isinstance(x.value, int) else ...)
                      for x in (sl.lower, sl.upper, sl.step)]
            if s is not None and ... not in bounds:
                return s[slice(*bounds)]
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute):
                recv = self.fold(node.func.value)
                if recv is not None:
                    if node.func.attr == "join" and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
                        parts = [self.fold(e) for e in node.args[0].elts]
                        return recv.join(parts) if None not in parts else None
                    if node.func.attr in ("upper", "lower", "strip", "title", "capitalize") and not node.args:
                        return getattr(recv, node.func.attr)()
                    if node.func.attr == "replace" and len(node.args) == 2:
                        a, b = self.fold(node.args[0]), self.fold(node.args[1])
                        return recv.replace(a, b) if a is not None and b is not None else None
                    if node.func.attr == "format":
                        args = [self.fold(a) for a in node.args]
                        return recv.format(*args) if None not in args and not node.keywords else None
            if isinstance(node.func, ast.Name) and node.func.id == "chr" and node.args and isinstance(node.args[0], ast.Constant):
                v = node.args[0].value
                return chr(v) if isinstance(v, int) and 0 <= v < 0x110000 else None
        return None

    @staticmethod
    def _matches(dotted: str | None, table: dict) -> tuple[str, str] | None:
        if not dotted:
            return None
        if dotted in table or dotted + "." in table:
            return table.get(dotted) or table[dotted + "."]
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            hit = table.get(".".join(parts[:i]) + ".")
            if hit:
                return hit
        return None

    def _protected(self, dotted: str | None) -> bool:
        return bool(dotted) and dotted.split(".")[0] in _PROTECTED_ROOTS and dotted.split(".")[0] in self._imported_roots()

    def _imported_roots(self) -> set[str]:
        return {v.split(".")[0] for v in self.aliases.values()} | self.dynamic_roots | {"builtins"}

    @property
    def func(self) -> _Func | None:
        return self.funcs[-1] if self.funcs else None

    def _aliased_input(self, node: ast.AST, f: _Func) -> bool:
        """Whether an expression is one of forward's inputs or a view of it (x, x.data, x[0], x.view(-1))."""
        while True:
            if isinstance(node, ast.Name):
                return node.id in f.args
            if isinstance(node, ast.Attribute):
                node = node.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEW_METHODS:
                node = node.func.value
            else:
                return False

    def _root_name(self, node: ast.AST) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return node.id if isinstance(node, ast.Name) else None

    # -- visitors ----------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._check_module(a.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add("reference_peek", "relative import: reaches modules next to the candidate (the reference?)", node)
            return
        mod = node.module or ""
        self._check_module(mod, node)
        for a in node.names:
            if a.name in ("Model", "get_inputs", "get_init_inputs"):
                self.add("reference_inherit", f"imports {a.name} from {mod}: the reference's own code", node)
            self._check_call_target(f"{mod}.{a.name}", node, imported=True)
            if f"{mod}.{a.name}" in ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load", "triton.jit"):
                self.custom_kernel = True

    def _check_module(self, name: str, node: ast.AST) -> None:
        root = name.split(".")[0]
        hit = _IMPORTS.get(root) or _IMPORTS.get(name)
        if hit:
            self.add(hit[0], hit[1], node)
            if root == "multiprocessing":
                self.add("process_escape", "imports multiprocessing (other processes)", node)
        if name.startswith("multiprocessing.shared_memory"):
            self.add("reference_peek", "imports shared_memory (the judge's results?)", node)
        if name.startswith("torch.utils.cpp_extension") or root == "triton":
            self.custom_kernel = True
        if root not in sys.stdlib_module_names and root not in _ALLOWED_THIRD_PARTY and root not in _IMPORTS:
            self.add("reference_peek", f"imports {name}, which is neither the standard library nor torch/numpy/triton "
                     "(the reference module?)", node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name == "Model":
            self.add("reference_inherit", "defines a class named Model, the reference's name", node)
        for base in node.bases:
            d = self.dotted(base)
            if d in ("torch.Tensor", "torch._C._TensorBase", "torch._C.TensorBase", "Tensor"):
                self.add("lazy_output", f"class {node.name} subclasses torch.Tensor: outputs can be proxies computed later", node)
            elif d and (d == "Model" or d.endswith(".Model")):
                self.add("reference_inherit", f"class {node.name} inherits from the reference Model", node)
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self.add("lazy_output", f"defines {node.name}: intercepts torch ops, so outputs can be deferred proxies", node)
        if not self.funcs and not self.classes and node.name in ("get_inputs", "get_init_inputs"):
            # Harmless by construction (the harness never calls the candidate's copy), so only a hint.
            self.add("problem_changed", f"redefines {node.name}(); the harness builds inputs from the reference only", node, hint=True)
        for dec in node.decorator_list:
            d = self.dotted(dec.func if isinstance(dec, ast.Call) else dec)
            if d in ("functools.lru_cache", "functools.cache", "lru_cache", "cache"):
                self.add("result_cache", f"memoises {node.name}() with {d.split('.')[-1]}: answers come from a table", dec)
            if d and (d == "triton.jit" or d.startswith("triton.")):
                self.custom_kernel = True
        f = _Func(node, self.classes[-1] if self.classes else None)
        self.funcs.append(f)
        if f.is_forward:
            self._check_forward_body(f)
        self.generic_visit(node)
        self.funcs.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _check_forward_body(self, f: _Func) -> None:
        for node in ast.walk(f.node):
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                self.add("lazy_output", "forward is a generator: its output is computed when consumed", node)
            if isinstance(node, ast.Return) and node.value is not None:
                self._check_return(f, node)

    def _check_return(self, f: _Func, node: ast.Return) -> None:
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        for v in values:
            if isinstance(v, ast.Lambda):
                self.add("lazy_output", "forward returns a lambda, not a tensor", node)
            elif isinstance(v, ast.Name) and v.id in f.args:
                self.add("output_alias", f"forward returns its input {v.id!r} as the output", node)
            elif isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == "self":
                self.add("output_alias", f"forward returns the stored buffer self.{v.attr}, not a fresh result", node)
            elif isinstance(v, ast.Call):
                d = self.dotted(v.func) or ""
                last = d.split(".")[-1]
                if last in ("zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full"):
                    self.add("degenerate_output", f"forward returns a constant tensor ({last}) instead of a computed one", node)
                elif last in ("empty", "empty_like", "new_empty", "empty_strided"):
                    self.add("uninitialised_output", f"forward returns freshly allocated memory ({last}) that nothing wrote", node)
                elif d in self.local_classes and not self._is_module_class(self.local_classes[d]):
                    self.add("lazy_output", f"forward returns a {d} object, not a tensor", node)
                elif d in ("functools.partial", "partial"):
                    self.add("lazy_output", "forward returns a deferred call (partial), not a tensor", node)

    def _is_module_class(self, cls: ast.ClassDef) -> bool:
        return any((self.dotted(b) or "").split(".")[-1] in ("Module", "Tensor") for b in cls.bases)

    def visit_Try(self, node: ast.Try) -> None:
        for h in node.handlers:
            broad = h.type is None or (self.dotted(h.type) or "") in ("Exception", "BaseException")
            reraises = any(isinstance(n, ast.Raise) for n in ast.walk(h))
            calls = any(isinstance(n, ast.Call) for b in h.body for n in ast.walk(b))
            if broad and not reraises:
                self.add("exception_fallback", "broad except that does not re-raise: a failing fast path is hidden", h)
            elif self.func is not None and calls and not reraises:
                self.add("exception_fallback", "except handler inside a function computes something else: a failing "
                         "custom path silently falls back", h)
        for n in node.finalbody:
            for sub in ast.walk(n):
                if isinstance(sub, (ast.Return, ast.Break, ast.Continue)):
                    self.add("exception_fallback", "return/break inside finally swallows any exception from the try "
                             "block: a failing fast path is hidden", sub)
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id == "Model" and "Model" not in self.aliases:
                self.add("reference_inherit", "refers to Model, the reference's class", node)
            elif node.id == "Model":
                self.add("reference_inherit", f"refers to Model (imported as {self.aliases['Model']})", node)
            elif node.id == "__builtins__":
                self.add("timer_tamper", "reaches __builtins__, the namespace the harness's code also uses", node)
            f = self.func
            if f is not None and f.in_class is not None and node.id in self.module_numbers and node.id in self.size_names \
                    and node.id not in f.locals and node.id not in f.args:
                self.add("problem_changed", f"reads its own size global {node.id!r} instead of the input's shape", node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _FRAME_ATTRS:
            self.add("reference_peek", f"reads frame attribute {node.attr}: reaches the harness's variables", node)
        elif node.attr in _NAMESPACE_ATTRS:
            self.add("reference_peek", f"reads {node.attr}: reaches other code's namespaces", node)
        elif node.attr in ("_version", "_cdata"):
            self.add("result_cache", f"reads {node.attr}: identifies a buffer or its write count, not its contents", node)
        elif node.attr in ("__torch_function__", "__torch_dispatch__"):
            self.add("lazy_output", f"sets up {node.attr}: intercepts torch ops", node)
        if isinstance(node.ctx, ast.Load):
            d = self.dotted(node)
            if self.task_fp32 and d in _REDUCED_DTYPES:
                self.add("precision_downgrade", f"uses {d} while the task is fp32", node)
            if d in ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"):
                self.custom_kernel = True
            if d in ("sys.modules", "os.environ") and not self._stored_subscript(node):
                what = "the module table (the reference module?)" if d == "sys.modules" else "the environment"
                self.add("reference_peek", f"reads {what}", node)
        self.generic_visit(node)

    def _stored_subscript(self, node: ast.AST) -> bool:
        return id(node) in getattr(self, "_store_bases", set())

    def visit_Subscript(self, node: ast.Subscript) -> None:
        f = self.func
        if f is not None and f.is_forward and isinstance(node.slice, ast.Tuple | ast.Slice):
            slices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for s in slices:
                if isinstance(s, ast.Slice) and s.step is not None and self._root_name(node.value) in f.args:
                    step = s.step.value if isinstance(s.step, ast.Constant) else None
                    if step not in (1, -1):
                        self.add("input_exploit", "forward reads its input with a stride: a subsample that fits only "
                                 "some input distributions", node, hint=True)
        if isinstance(node.ctx, ast.Store) and f is not None and f.is_forward and self._aliased_input(node.value, f):
            self.add("input_mutation", "forward writes into its input", node)
        self.generic_visit(node)

    # assignments -------------------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._check_store(t, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_store(node.target, node)
        f = self.func
        t = node.target
        if f is not None and f.in_class is not None and f.node.name != "__init__":
            counter = (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self") or \
                      (isinstance(t, ast.Name) and (t.id in f.globals))
            if counter:
                self.add("result_cache", "counts calls in a persistent variable: behaviour can depend on the call number", node)
                if any(ast.dump(_as_load(t)) == c for c in f.compared) or self._compared_anywhere(t):
                    self.add("drift", "switches behaviour on a call counter: correct early, different later", node)
        self.generic_visit(node)

    def _compared_anywhere(self, target: ast.AST) -> bool:
        want = ast.dump(_as_load(target))
        return any(want in c for fn in self.funcs for c in fn.compared)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_store(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            if isinstance(t, ast.Attribute) and self._protected(self.dotted(t.value)):
                self.add("timer_tamper", f"deletes {self.dotted(t)}, which the harness relies on", node)
        self.generic_visit(node)

    def _check_store(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self._check_store(e, node)
            return
        if isinstance(target, ast.Attribute):
            self._check_attr_write(self.dotted(target.value), target.attr, node)
            f = self.func
            if f is not None and f.is_forward and self._root_name(target.value) in f.args:
                self.add("result_cache", "forward stores state on its input object: a later call can find it there", node)
            if target.attr == "__class__":
                self.add("lazy_output", "changes an object's __class__ (turns a tensor into a proxy)", node)
        elif isinstance(target, ast.Subscript):
            self._store_bases = getattr(self, "_store_bases", set()) | {id(target.value)}
            base = self.dotted(target.value)
            key = self.fold(target.slice)
            if base == "sys.modules":
                self.add("timer_tamper", "replaces a module in sys.modules", node)
            elif base == "os.environ":
                if key not in _ALLOWED_ENV_WRITES:
                    self.add("timer_tamper", f"sets environment variable {key or '?'}, which the harness and reference share", node)
            elif base and (base.endswith(".__dict__") or self._protected(base)) and self._protected(base.removesuffix(".__dict__")):
                self.add("timer_tamper", f"writes into the namespace of {base.removesuffix('.__dict__')}", node)
            elif isinstance(target.value, ast.Call) and (self.dotted(target.value.func) or "") in ("vars", "globals", "builtins.vars"):
                inner = self.dotted(target.value.args[0]) if target.value.args else "globals"
                if inner and (self._protected(inner) or inner == "globals" and key in ("__builtins__",)):
                    self.add("timer_tamper", f"writes into the namespace of {inner}", node)
            f = self.func
            if f is not None and f.in_class is not None and f.node.name != "__init__":
                root = target.value
                persistent = (isinstance(root, ast.Attribute) and isinstance(root.value, ast.Name) and root.value.id == "self") or \
                             (isinstance(root, ast.Name) and root.id not in f.locals and root.id not in f.args)
                if persistent:
                    self.add("result_cache", "fills a table that outlives the call: answers can come from it", node)

    def _check_attr_write(self, base: str | None, attr: str, node: ast.AST) -> None:
        full = f"{base}.{attr}" if base else attr
        if attr in _PRECISION_ATTRS:
            self.add("precision_downgrade", f"sets {full}: reduced-precision math for fp32", node)
        elif self._protected(base):
            what = "a global torch flag shared with the reference" if (base or "").startswith("torch.backends") \
                else "something the harness relies on"
            self.add("timer_tamper", f"assigns {full}, {what}", node)
        elif attr in _TIMER_ATTRS and base not in ("self",):
            self.add("timer_tamper", f"replaces {attr} on {base or 'an object'}: the clock, events or synchronisation", node)

    # calls ---------------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        d = self.dotted(node.func)
        self._check_call_target(d, node)
        if isinstance(node.func, ast.Attribute):
            self._check_method(node)
        if d in ("setattr", "builtins.setattr", "delattr", "builtins.delattr") and len(node.args) >= 2:
            base, name = self.dotted(node.args[0]), self.fold(node.args[1])
            if name is not None:
                self._check_attr_write(base, name, node)
            elif self._protected(base) or base in _imported_module_names(self):
                self.add("timer_tamper", f"sets an attribute of {base} whose name is computed at run time", node)
        elif d in ("getattr", "builtins.getattr") and len(node.args) >= 2 and self.fold(node.args[1]) is None:
            base = self.dotted(node.args[0]) or ""
            if base.split(".")[0] in ("sys", "gc", "inspect", "os", "builtins", "importlib", "subprocess", "ctypes", "cudaopt", "time"):
                self.add("reference_peek", f"looks up an attribute of {base} by a name computed at run time", node)
        elif d in ("importlib.import_module", "__import__", "builtins.__import__") and node.args:
            mod = self.fold(node.args[0])
            if mod is None:
                self.add("reference_peek", "imports a module whose name is computed at run time", node)
            else:
                self._check_module(mod, node)
        elif d in ("exec", "eval", "compile", "builtins.exec", "builtins.eval") and node.args:
            code = self.fold(node.args[0])
            if code is None:
                self.add("process_escape", f"{d}() of code built at run time: the static checks cannot see what it does", node)
            else:
                self._scan_nested(code, node)
        elif d in ("open", "builtins.open"):
            self._check_open(node)
        elif d == "torch.set_float32_matmul_precision":
            arg = self.fold(node.args[0]) if node.args else None
            if arg != "highest":
                self.add("precision_downgrade", f"sets float32 matmul precision to {arg or '?'}: tf32/bf16 math for fp32", node)
        elif d == "torch.set_default_dtype" and self.task_fp32 and node.args and self.dotted(node.args[0]) in _REDUCED_DTYPES:
            self.add("precision_downgrade", "sets a reduced default dtype in an fp32 task", node)
        elif d in ("type", "builtins.type") and len(node.args) == 3:
            self.add("lazy_output", "creates a class at run time with type(name, bases, dict)", node, hint=True)
        elif d in ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load", "cupy.RawKernel", "cupy.RawModule"):
            self.custom_kernel = True
        f = self.func
        if f is not None and f.is_forward:
            for kw in node.keywords:
                if kw.arg == "out" and self._aliased_input(kw.value, f):
                    self.add("input_mutation", "forward writes its result into an input (out=)", node)
                if kw.arg == "inplace" and isinstance(kw.value, ast.Constant) and kw.value.value is True and \
                        node.args and self._aliased_input(node.args[0], f):
                    self.add("input_mutation", "forward applies an in-place op to its input", node)
            if d in ("torch.equal",) and any(isinstance(a, ast.Attribute) and self._root_name(a) == "self" for a in node.args):
                self.add("result_cache", "compares the input with a stored one: answers can be replayed", node)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        f = self.func
        if f is not None and f.is_forward and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(self._root_name(s) in f.args for s in sides) and any(
                    isinstance(s, ast.Attribute) and self._root_name(s) == "self" for s in sides):
                self.add("result_cache", "checks whether the input is the same object as last time", node)
        self.generic_visit(node)

    def _check_call_target(self, d: str | None, node: ast.AST, imported: bool = False) -> None:
        # A dotted name counts only when its root is a module the candidate imported (a local variable
        # called `signal` is not the signal module); bare builtins such as id() always count.
        if d and "." in d and not imported and d.split(".")[0] not in self._imported_roots():
            return
        hit = self._matches(d, _CALLS) or next((v for k, v in _CALL_PREFIXES.items() if d and d.startswith(k)), None)
        if not hit and d in _ALLOCATOR_CALLS and self.func is not None and self.func.node.name != "__init__":
            hit = _ALLOCATOR_CALLS[d]
        if hit and not (d in ("id", "hash") and (self.func is None or imported)):
            if d in ("id", "hash") and (d in self.aliases):
                return
            self.add(hit[0], hit[1], node)
        if d and d.split(".")[0] == "cudaopt":
            self.add("timer_tamper", "uses the evaluator's own module", node)

    def _check_method(self, node: ast.Call) -> None:
        attr = node.func.attr
        hit = _METHODS.get(attr)
        if hit:
            cat, why = hit
            if cat == "precision_downgrade" and not self.task_fp32:
                pass
            elif attr in ("half", "bfloat16") and node.args:
                pass
            else:
                self.add(cat, why, node)
        if attr == "to" and self.task_fp32:
            args = list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]
            if any(self.dotted(a) in _REDUCED_DTYPES for a in args):
                self.add("precision_downgrade", "converts to a reduced dtype in an fp32 task", node)
        f = self.func
        if f is not None and f.is_forward and attr.endswith("_") and not attr.startswith("_") and \
                attr != "requires_grad_" and self._aliased_input(node.func.value, f):
            self.add("input_mutation", f"forward calls in-place {attr}() on its input", node)

    def _check_open(self, node: ast.Call) -> None:
        mode = self.fold(node.args[1]) if len(node.args) > 1 else None
        for kw in node.keywords:
            if kw.arg == "mode":
                mode = self.fold(kw.value)
        path_src = ast.unparse(node.args[0]) if node.args else ""
        if mode is None and (len(node.args) > 1 or any(k.arg == "mode" for k in node.keywords)):
            self.add("process_escape", "opens a file with a mode computed at run time", node)
        elif mode and any(c in mode for c in "wax+"):
            if "tempfile" not in path_src and not any((self.dotted(n) or "").startswith("tempfile.")
                                                      for n in ast.walk(node.args[0]) if node.args):
                self.add("process_escape", "opens a file for writing outside a private scratch folder", node)
        else:
            self.add("reference_peek", "opens a file for reading (saved results? the reference?)", node)

    def _scan_nested(self, code: str, node: ast.AST) -> None:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            self.add("process_escape", "exec/eval of a string that is not valid Python", node)
            return
        inner = _Scanner(code, device="cpu", task_fp32=self.task_fp32, size_names=self.size_names,
                         aliases=self.aliases, prefix="exec: ")
        inner.funcs, inner.classes = list(self.funcs), list(self.classes)
        inner.scan_tree(tree)
        for f in inner.findings:
            self.add(f.category, f.message.removeprefix(HINT_PREFIX) + " (inside exec'd code)", f.evidence,
                     hint=f.message.startswith(HINT_PREFIX))
        self.custom_kernel |= inner.custom_kernel
        if not inner.findings:
            self.add("process_escape", "exec/eval of a string: code hidden from review", node, hint=True)

    # embedded C++/CUDA and obfuscated strings ------------------------------------------------------------
    def _scan_embedded(self, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Call, ast.Subscript)):
                text = self.fold(node)
                if text is None or isinstance(node, ast.Constant):
                    continue
                # A name assembled from pieces that spells something sensitive is obfuscation.
                word = text.strip()
                category = _SENSITIVE_STRINGS.get(word) or _SENSITIVE_MODULES.get(word.split(".")[0])
                if category:
                    self.add(category, f"assembles the name {text.strip()!r} from pieces: hides a sensitive call", node)
                if len(text) < 12 or not isinstance(node, ast.BinOp):
                    continue
            else:
                continue
            if len(text) < 12:
                continue
            if _CUSTOM_KERNEL_RE.search(text):
                self.custom_kernel = True
            self._scan_code_text(text)

    def _scan_code_text(self, text: str) -> None:
        code = _strip_c_comments(text)
        # Kernels for operators of a namespace this file does not declare (aten, the catch-all `_`, or a
        # macro standing for one) replace what the reference's ops run; the candidate's own are fine.
        for m in _LIBRARY_IMPL_RE.finditer(code):
            if m.group(1) not in self.declared_libraries:
                self.add("timer_tamper", _OPERATOR_OVERRIDE, m.group(0).strip())
                break
        for pattern, category, why, hint, fp32_only in _EMBEDDED:
            if fp32_only and not self.task_fp32:
                continue
            m = pattern.search(code) if not pattern.pattern.startswith("^") else re.search(pattern.pattern, code, re.M)
            if m:
                start = code.rfind("\n", 0, m.start()) + 1
                end = code.find("\n", m.end())
                self.add(category, why, code[start: end if end != -1 else len(code)].strip(), hint=hint)


def _as_load(node: ast.AST) -> ast.AST:
    """The same expression with Load context, so a store target compares equal to later reads."""
    if isinstance(node, ast.Attribute):
        return ast.Attribute(value=_as_load(node.value), attr=node.attr, ctx=ast.Load())
    if isinstance(node, ast.Name):
        return ast.Name(id=node.id, ctx=ast.Load())
    return node


def _imported_module_names(scanner: _Scanner) -> set[str]:
    return set(scanner.aliases.values())


_LIBRARY_DEF_RE = re.compile(r"\bTORCH_LIBRARY\s*\(\s*(\w+)\s*,")
_LIBRARY_IMPL_RE = re.compile(r"\bTORCH_LIBRARY_(?:IMPL|FRAGMENT)\s*\(\s*(\w+)\s*,[^)]*\)")
_C_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _strip_c_comments(text: str) -> str:
    return _C_COMMENT_RE.sub("", text)
