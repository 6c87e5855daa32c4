# cython: language_level=3
"""The compiled parser: ``parse_target`` and ``parse_split_target`` in C.

Same contract as the reference (``urlguard._parser_py``), to the byte: the
same verdict, rule, component, index and offset, and the same ``Target``, for
every input under every ``Policy``. The rules are applied in the reference's
order: one pass over the raw bytes for the rules about the whole target
(too-long, fragment, form, raw-char, too-many), which also applies the
empty- and dot-segment rules to a path of ordinary bytes, then the rules
about pieces. These take a quick pass that only accepts (escapes decoded,
UTF-8 and the allowed characters checked at once, over the raw bytes) and,
when it meets anything it is not sure of, a careful one: one pass per
segment and per query pair that needs a closer look, in the reference's
order, which names the rule. A piece without escapes is never copied: its
text is made from the raw bytes.

An accepted origin-form target outside ``path_params="split"`` is only
checked: it comes back as a ``_LazyTarget`` (a ``Target`` whose segments and
query are made in C when first read, from where the walk noted them), so a
request whose handler never reads them pays for the checks alone.
Absolute-form and "split" targets are built whole, with their authority and
matrix parameters.

A violation is written into an ``Err`` struct and the walk returns; the
``InvalidTarget`` is raised once, at the entry (raising through several
Cython frames costs about as much as parsing a plain target).

Memory safety: every walk below reads ``s[i]`` only behind an explicit
``i < end`` (``i + 2 < end`` for the two digits of an escape, ``i + 8 <= end``
for a block of eight ordinary bytes skipped at once), where ``end`` never
exceeds the length of the bytes object; the comment at each walk says which
bound holds. Decoded bytes go to a scratch buffer as long
as the whole target (decoding never makes a piece longer). The bounds a
lazy target keeps are read only where they are exact (a target of at most
0xFFFF bytes, at most 16 pieces of each kind), and only in a lazy target
the walk made.
tests/test_parser_c.py puts pieces, escapes and UTF-8 sequences at the very
end of the buffer, and ``tox -e asan`` runs it under AddressSanitizer.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.string cimport memchr, memcmp, memcpy, memset

from . import _grammar
from ._errors import InvalidTarget
from ._policy import DEFAULT_POLICY, Policy
from ._routes import unmount
from ._target import Target

cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void* PyUnicode_DATA(object)
    int PyUnicode_KIND(object)
    void PyUnicode_WRITE(int kind, void* data, Py_ssize_t index, Py_UCS4 value)
    object PyBytes_FromStringAndSize(const char* s, Py_ssize_t size)
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    PyObject* PyType_GenericAlloc(PyTypeObject*, Py_ssize_t) except NULL
    object PyObject_GenericGetAttr(object, object)

cdef extern from *:
    """
    /* A type's tp_new, called directly (no method lookup, no argument parsing). */
    static PyObject *urlguard_call_tp_new(PyObject *type, PyObject *args) {
        return ((PyTypeObject *)type)->tp_new((PyTypeObject *)type, args, NULL);
    }
    """
    object _call_tp_new "urlguard_call_tp_new" (object type, object args)

cdef extern from *:
    """
    /* _LazyTarget as a type of its own, made from a spec with Target as its
       base: the same instance layout (Target's six slots), with a deallocator
       that keeps a few freed objects for the next targets instead of the
       generic one of classes defined in Python (which looks up finalizers,
       weak references and a __dict__ that Target does not have). Its objects
       are created untracked with their slots NULL; the caller fills the slots
       and then tracks them. */
    #define URLGUARD_SLOTS 6
    /* The table of query names and the freed lazy targets are shared by
       every thread: only under the GIL. */
    #ifdef Py_GIL_DISABLED
    #define URLGUARD_SHARED_STATE 0
    #else
    #define URLGUARD_SHARED_STATE 1
    #endif
    #define URLGUARD_KEPT 16
    static PyTypeObject *urlguard_lazy_type = NULL;
    static Py_ssize_t urlguard_slot_offset[URLGUARD_SLOTS];
    #if URLGUARD_SHARED_STATE
    /* Objects kept for reuse: their memory only (no type reference, slots NULL,
       untracked). A free-threaded build keeps none: the list would need a lock. */
    static PyObject *urlguard_kept[URLGUARD_KEPT];
    static int urlguard_kept_count = 0;
    #endif

    static void urlguard_lazy_dealloc(PyObject *self) {
        PyTypeObject *tp = Py_TYPE(self);
        int k;
        PyObject_GC_UnTrack(self);
        for (k = 0; k < URLGUARD_SLOTS; k++) {
            Py_CLEAR(*(PyObject **)((char *)self + urlguard_slot_offset[k]));
        }
    #if URLGUARD_SHARED_STATE
        if (urlguard_kept_count < URLGUARD_KEPT) {
            urlguard_kept[urlguard_kept_count++] = self;
        } else
    #endif
        {
            tp->tp_free(self);
        }
        Py_DECREF(tp);  /* an instance of a heap type holds a reference to it */
    }

    static PyObject *urlguard_lazy_type_new(PyObject *base, const Py_ssize_t *offsets,
                                            Py_ssize_t extra, getattrofunc getattro) {
        static PyType_Slot slots[] = {
            {Py_tp_dealloc, (void *)urlguard_lazy_dealloc},
            {Py_tp_getattro, NULL},  /* getattro, below */
            {Py_tp_doc, (void *)"A Target whose segments and query are made when first read."},
            {0, NULL},
        };
        /* Target's slots, then `extra` bytes of C data (the walk's notes); no
           Py_TPFLAGS_BASETYPE, so every instance is of this very type and
           has that room; the GC flag, traverse and clear come from Target. */
        static PyType_Spec spec = {
            "urlguard._parser_c._LazyTarget", 0, 0, Py_TPFLAGS_DEFAULT, slots
        };
        PyObject *bases, *type;
        int k;
        if (urlguard_lazy_type != NULL) {
            PyErr_SetString(PyExc_RuntimeError, "_LazyTarget is made once");
            return NULL;
        }
        spec.basicsize = (int)(((PyTypeObject *)base)->tp_basicsize + extra);
        slots[1].pfunc = (void *)getattro;
        bases = PyTuple_Pack(1, base);
        if (bases == NULL) return NULL;
        type = PyType_FromSpecWithBases(&spec, bases);
        Py_DECREF(bases);
        if (type == NULL) return NULL;
        for (k = 0; k < URLGUARD_SLOTS; k++) urlguard_slot_offset[k] = offsets[k];
        Py_INCREF(type);  /* kept for the module's lifetime */
        urlguard_lazy_type = (PyTypeObject *)type;
        return type;
    }

    /* A new _LazyTarget, untracked, its slots NULL. */
    static PyObject *urlguard_lazy_alloc(void) {
        PyObject *op;
        int k;
    #if URLGUARD_SHARED_STATE
        if (urlguard_kept_count > 0) {
            op = urlguard_kept[--urlguard_kept_count];
            return PyObject_Init(op, urlguard_lazy_type);
        }
    #endif
        op = PyObject_GC_New(PyObject, urlguard_lazy_type);
        if (op == NULL) return NULL;
        for (k = 0; k < URLGUARD_SLOTS; k++) {
            *(PyObject **)((char *)op + urlguard_slot_offset[k]) = NULL;
        }
        return op;
    }
    """
    ctypedef PyObject* (*getattrofunc)(PyObject*, PyObject*)
    object _lazy_type_new "urlguard_lazy_type_new" (
        object base, const Py_ssize_t* offsets, Py_ssize_t extra, getattrofunc getattro)
    PyObject* _lazy_alloc "urlguard_lazy_alloc" () except NULL
    void PyObject_GC_Track(void*)
    const bint _SHARED_STATE "URLGUARD_SHARED_STATE"

# --- rule codes, in the reference's spelling -------------------------------------

cdef enum:
    R_TOO_LONG, R_TOO_MANY, R_FRAGMENT, R_BAD_FORM, R_RAW_CHAR, R_MALFORMED
    R_INVALID_UTF8, R_FORBIDDEN, R_ENCODED_SLASH, R_ENCODED_BACKSLASH, R_DOT
    R_EMPTY, R_DOUBLE

cdef tuple _RULES = (
    "too-long", "too-many", "fragment", "bad-form", "raw-char", "malformed-escape",
    "invalid-utf8", "forbidden-char", "encoded-slash", "encoded-backslash", "dot-segment",
    "empty-segment", "double-encoding",
)

cdef enum:
    C_TARGET, C_PATH, C_QUERY

cdef tuple _COMPONENTS = ("target", "path", "query")

cdef struct Err:
    int rule
    int component
    Py_ssize_t index  # -1: None (a rule about the whole target)
    Py_ssize_t offset


cdef inline int _fail(Err* err, int rule, int component, Py_ssize_t index, Py_ssize_t offset) noexcept:
    err.rule = rule
    err.component = component
    err.index = index
    err.offset = offset
    return -1


# --- building Target and InvalidTarget ---------------------------------------------
#
# Both are plain classes with __slots__ whose __init__ only stores its
# arguments; calling a Python __init__ costs more than the whole parse of a
# plain target, so the slots are written directly, at the offsets their
# member descriptors give. At import, an object built that way is compared
# with one built by the constructor, slot by slot; if they ever differ (the
# class changed), the constructor is called instead.

cdef Py_ssize_t _member_offset(type cls, str name) except -1:
    descriptor = cls.__dict__.get(name)
    if type(descriptor).__name__ != "member_descriptor":
        raise TypeError(f"{cls.__name__}.{name} is not a slot")
    return (<PyMemberDescrObject*>descriptor).d_member.offset


cdef inline void _store(object obj, Py_ssize_t offset, object value) noexcept:
    # Only on a fresh object whose slots are NULL (tp_alloc zeroes them).
    cdef PyObject** slot = <PyObject**>((<char*><PyObject*>obj) + offset)
    Py_INCREF(value)
    slot[0] = <PyObject*>value


cdef Py_ssize_t _T_RAW, _T_SEGMENTS, _T_QUERY, _T_PARAMS, _T_AUTHORITY, _T_PLUS
cdef Py_ssize_t _E_RULE, _E_COMPONENT, _E_INDEX, _E_OFFSET
cdef bint _fast_target = False
cdef bint _fast_error = False


cdef object _new_target(bytes raw, segments, query, params, authority, bint plus):
    if not _fast_target:
        return Target(
            raw, segments, query, params=params, authority=authority, plus_as_space=plus
        )
    obj = <object>PyType_GenericAlloc(<PyTypeObject*>Target, 0)
    Py_XDECREF(<PyObject*>obj)  # PyType_GenericAlloc gave a new reference; <object> took one more
    _store(obj, _T_RAW, raw)
    _store(obj, _T_SEGMENTS, segments)
    _store(obj, _T_QUERY, query)
    _store(obj, _T_PARAMS, params)
    _store(obj, _T_AUTHORITY, authority)
    _store(obj, _T_PLUS, True if plus else False)
    return obj


cdef inline object _reject(Err* err, int rule, int component, Py_ssize_t index,
                          Py_ssize_t offset):
    _fail(err, rule, component, index, offset)
    return None


cdef object _new_error(Err* err):
    rule = _RULES[err.rule]
    component = _COMPONENTS[err.component]
    index = None if err.index < 0 else err.index
    offset = err.offset
    if not _fast_error:
        return InvalidTarget(rule, component, index, offset)
    # BaseException's tp_new keeps the arguments in .args, as __init__'s super() call does.
    args = (rule, component, index, offset)
    error = _call_tp_new(InvalidTarget, args)
    _store(error, _E_RULE, rule)
    _store(error, _E_COMPONENT, component)
    _store(error, _E_INDEX, index)
    _store(error, _E_OFFSET, offset)
    return error


def _check_direct_construction():
    """Set up the direct construction of Target and InvalidTarget, and turn it
    on only where it gives exactly what the constructor gives."""
    global _T_RAW, _T_SEGMENTS, _T_QUERY, _T_PARAMS, _T_AUTHORITY, _T_PLUS
    global _E_RULE, _E_COMPONENT, _E_INDEX, _E_OFFSET, _fast_target, _fast_error
    target_slots = ("_raw", "_segments", "_query", "_params", "_authority", "_plus")
    error_slots = ("rule", "component", "index", "offset")
    _fast_target = _fast_error = False
    try:
        if set(Target.__slots__) != set(target_slots) or Target.__mro__ != (Target, object):
            raise TypeError("Target's slots changed")
        _T_RAW, _T_SEGMENTS, _T_QUERY, _T_PARAMS, _T_AUTHORITY, _T_PLUS = [
            _member_offset(Target, name) for name in target_slots
        ]
        _fast_target = True
        for args in ((b"/a?b", ("a",), (("b", ""),), None, None, True),
                     (b"http://h/", ("",), (), ((),), "h", False)):
            direct = _new_target(args[0], args[1], args[2], args[3], args[4], args[5])
            built = Target(args[0], args[1], args[2], params=args[3], authority=args[4],
                           plus_as_space=args[5])
            for name in target_slots:
                if getattr(direct, name) is not getattr(built, name):
                    raise TypeError(f"Target.{name} differs")
    except (TypeError, AttributeError):
        _fast_target = False
    try:
        if set(InvalidTarget.__slots__) != set(error_slots):
            raise TypeError("InvalidTarget's slots changed")
        _E_RULE, _E_COMPONENT, _E_INDEX, _E_OFFSET = [
            _member_offset(InvalidTarget, name) for name in error_slots
        ]
        _fast_error = True
        cdef_err = [(R_DOT, C_PATH, 3, 17), (R_TOO_LONG, C_TARGET, -1, 8192)]
        for rule, component, index, offset in cdef_err:
            direct = _make_error(rule, component, index, offset)
            built = InvalidTarget(_RULES[rule], _COMPONENTS[component],
                                  None if index < 0 else index, offset)
            if direct.args != built.args or str(direct) != str(built):
                raise TypeError("InvalidTarget differs")
            for name in error_slots:
                if getattr(direct, name) != getattr(built, name):
                    raise TypeError(f"InvalidTarget.{name} differs")
    except (TypeError, AttributeError):
        _fast_error = False
    return _fast_target, _fast_error


def _make_error(int rule, int component, Py_ssize_t index, Py_ssize_t offset):
    cdef Err err
    _fail(&err, rule, component, index, offset)
    return _new_error(&err)


# --- byte classes -----------------------------------------------------------------

# RFC 3986 §2.1: HEXDIG, either case; -1 for every other byte.
cdef signed char _HEX[256]
for _c in range(256):
    _HEX[_c] = int(chr(_c), 16) if _c in _grammar.HEXDIG else -1

# RFC 3986 §3.2.2 reg-name = *( unreserved / pct-encoded / sub-delims ), '%' by shape.
cdef unsigned char _REG_NAME[256]
# IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
cdef unsigned char _FUTURE[256]
# The IPv6address of an IP-literal, by shape only: HEXDIG, ':' and '.' (IPv4 tail).
cdef unsigned char _IPV6[256]
# What a decoded host may not hold: they would change the authority's form.
cdef unsigned char _HOST_DELIMS[256]
for _c in range(256):
    _REG_NAME[_c] = _c in _grammar.REG_NAME or _c == 0x25
    _FUTURE[_c] = _c in _grammar.REG_NAME or _c == 0x3A
    _IPV6[_c] = _c in _grammar.HEXDIG or _c in (0x3A, 0x2E)
    _HOST_DELIMS[_c] = chr(_c) in "@:?#[]%"


# --- per-policy tables ------------------------------------------------------------

cdef class _Tables:
    """What the walk reads from a Policy, as C arrays and flags."""

    cdef object policy
    cdef unsigned char path_raw[256]
    cdef unsigned char query_raw[256]
    # Allowed raw and no separator, escape or other byte that needs a look:
    # the scan's inner loops skip these.
    cdef unsigned char path_plain[256]
    cdef unsigned char query_plain[256]
    # What the quick pass steps over: the plain bytes and the separators.
    cdef unsigned char path_quick[256]
    cdef unsigned char query_quick[256]
    # Decoded ASCII characters allowed (the forbidden-char rule), per component.
    cdef unsigned char path_ascii[128]
    cdef unsigned char query_ascii[128]
    # Escaped ASCII the quick pass accepts in a path: path_ascii but the
    # characters with a rule of their own ('/', '\\', '%' and '.').
    cdef unsigned char path_quick_ascii[128]
    # The allowed code points as sorted inclusive intervals [lo0, hi0, lo1, ...].
    cdef unsigned int* path_iv
    cdef Py_ssize_t path_iv_n
    cdef unsigned int* query_iv
    cdef Py_ssize_t query_iv_n
    # Every byte allowed raw decodes to an allowed character ('+' to space).
    cdef bint path_raw_clean
    cdef bint query_raw_clean
    cdef Py_ssize_t max_length, max_segments, max_params
    cdef bint reject_slash, reject_backslash, reject_dots, reject_empty, reject_double
    cdef bint split, plus, kept_backslash_raw

    def __dealloc__(self):
        PyMem_Free(self.path_iv)
        PyMem_Free(self.query_iv)


cdef unsigned int* _intervals(object pairs, Py_ssize_t* count) except NULL:
    cdef Py_ssize_t n = len(pairs), k = 0
    cdef unsigned int* out = <unsigned int*>PyMem_Malloc(sizeof(unsigned int) * 2 * (n + 1))
    if out == NULL:
        raise MemoryError()
    for low, high in pairs:
        out[2 * k] = low
        out[2 * k + 1] = high
        k += 1
    count[0] = n
    return out


cdef inline bint _in_intervals(const unsigned int* iv, Py_ssize_t n, unsigned int cp) noexcept:
    # Binary search over n sorted, disjoint intervals: lo and hi stay in 0..n,
    # so iv[2 * mid + 1] is inside the 2 * n entries.
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cp < iv[2 * mid]:
            hi = mid
        elif cp > iv[2 * mid + 1]:
            lo = mid + 1
        else:
            return True
    return False


cdef _Tables _build_tables(object policy):
    cdef _Tables t = _Tables.__new__(_Tables)
    cdef int c
    t.policy = policy
    path_table = policy._raw_path_table
    query_table = policy._raw_query_table
    if len(path_table) != 256 or len(query_table) != 256:
        raise ValueError("a Policy's raw tables hold 256 entries")
    t.path_iv = _intervals(policy._path_allowed, &t.path_iv_n)
    t.query_iv = _intervals(policy._query_allowed, &t.query_iv_n)
    t.plus = policy.plus_as_space
    t.max_length = policy.max_length
    t.max_segments = policy.max_segments
    t.max_params = policy.max_params
    t.reject_slash = policy.encoded_slash == "reject"
    t.reject_backslash = policy.encoded_backslash == "reject"
    t.reject_dots = policy.dot_segment == "reject"
    t.reject_empty = policy.empty_segment == "reject"
    t.reject_double = policy.double_encoding == "reject"
    t.split = policy.path_params == "split"
    for c in range(256):
        t.path_raw[c] = path_table[c] != 0 and c != 0x3F and c != 0x23
        t.query_raw[c] = query_table[c] != 0 and c != 0x23
        t.path_plain[c] = t.path_raw[c] and c not in (0x2F, 0x25, 0x3B, 0x5C)
        t.query_plain[c] = t.query_raw[c] and c not in (0x26, 0x25, 0x2B)
        t.path_quick[c] = t.path_plain[c] or c == 0x2F
        t.query_quick[c] = t.query_plain[c] or c == 0x26 or (c == 0x2B and t.query_raw[c])
    for c in range(128):
        t.path_ascii[c] = _in_intervals(t.path_iv, t.path_iv_n, c)
        t.query_ascii[c] = _in_intervals(t.query_iv, t.query_iv_n, c)
        t.path_quick_ascii[c] = t.path_ascii[c] and c not in (0x2F, 0x5C, 0x25, 0x2E)
    t.path_raw_clean = True
    t.query_raw_clean = True
    for c in range(128):
        if t.path_raw[c] and c != 0x25 and not t.path_ascii[c]:
            t.path_raw_clean = False
        if t.query_raw[c] and c != 0x25 and not t.query_ascii[c]:
            t.query_raw_clean = False
    if t.plus and t.query_raw[0x2B] and not t.query_ascii[0x20]:
        t.query_raw_clean = False
    # A raw '\' is a kept separator too (encoded_backslash="keep" splits the text).
    t.kept_backslash_raw = not t.reject_backslash and t.path_raw[0x5C]
    return t


# The tables of the policy used last, and of every policy seen (by id, the
# policy kept alive beside them: hashing a dataclass per call costs more than
# the parse). Bounded: an application has a handful of policies.
cdef _Tables _last_tables = None
cdef dict _tables_by_id = {}


cdef object _DEFAULT_POLICY = DEFAULT_POLICY


cdef _Tables _tables_for(object policy):
    global _last_tables
    cdef _Tables t = _last_tables
    if policy is None:
        policy = _DEFAULT_POLICY
    if t is not None and t.policy is policy:
        return t
    if not isinstance(policy, Policy):
        kind = type(policy).__name__
        raise TypeError(f"parse_target(): policy must be a urlguard.Policy or None, not {kind}")
    t = _tables_by_id.get(id(policy))
    if t is None or t.policy is not policy:
        if len(_tables_by_id) >= 64:
            _tables_by_id.clear()
        t = _build_tables(policy)
        _tables_by_id[id(policy)] = t
    _last_tables = t
    return t


# --- text ---------------------------------------------------------------------------

# "" and the 128 one-character ASCII strings, made once (CPython shares them too).
# Longer segments and query values are made anew: a table of every recent
# text, handed out again, cost time, because segments and values vary (ids,
# slugs, digests) and a miss replaces a slot and frees a string (the micro
# benchmark's rotation, bench/RESULTS.md: mixed corpus 0.271-0.308 of naive
# with it, 0.250-0.268 without). Query names recur: see _name.
cdef PyObject* _single[129]
for _c in range(128):
    _single_text = chr(_c)
    Py_INCREF(_single_text)
    _single[_c] = <PyObject*>_single_text
_single_text = ""
Py_INCREF(_single_text)
_single[128] = <PyObject*>_single_text


cdef inline object _ascii(const unsigned char* d, Py_ssize_t n):
    """Text of n ASCII bytes: one allocation and a copy."""
    if n <= 1:
        return <object>_single[d[0] & 0x7F] if n else <object>_single[128]
    text = PyUnicode_New(n, 127)
    memcpy(PyUnicode_DATA(text), d, n)
    return text


# Query names come from the application's own forms and links, so the same
# few recur from request to request (orjson keeps JSON object keys the same
# way): the last name seen in each slot of a small table is handed out again
# instead of a new string (str is immutable, so sharing is safe; a hit saves
# an allocation and a deallocation: the benchmark's plain targets, parsed and
# read, went from 5,108 to 4,807 instructions each). Measured in the micro
# benchmark's rotation, names only: plain targets 0.182-0.188 of naive
# without the table, 0.174-0.180 with it; segments in it too: 0.186-0.191.
# Direct-mapped by a hash of the bytes; a slot keeps its name's bytes as two
# 64-bit keys and a length, which together determine the bytes exactly: a
# hit is three integer compares.
cdef enum:
    _NAME_SLOTS = 256
    _NAME_MAX_LENGTH = 16
cdef struct CachedName:  # 32 bytes
    unsigned long long first
    unsigned long long last
    Py_ssize_t length
    PyObject* text
cdef CachedName _names[_NAME_SLOTS]
memset(_names, 0, sizeof(_names))


cdef inline object _name(const unsigned char* d, Py_ssize_t n):
    """Text of a query name of n ASCII bytes: from the table, or made."""
    cdef unsigned int h
    cdef unsigned long long first, last
    cdef unsigned int head4, tail4
    cdef unsigned short head2, tail2
    cdef CachedName* slot
    cdef PyObject* old
    if n <= 1 or n > _NAME_MAX_LENGTH or not _SHARED_STATE:
        return _ascii(d, n)
    # The keys: words of the first and the last bytes, which together cover
    # d[:n] (overlapping unless n is 16, 8, 4 or 2). Every read is inside d[:n].
    if n >= 8:
        memcpy(&first, d, 8)
        memcpy(&last, d + n - 8, 8)
    elif n >= 4:
        memcpy(&head4, d, 4)
        memcpy(&tail4, d + n - 4, 4)
        first = head4 | (<unsigned long long>tail4 << 32)
        last = 0
    else:
        memcpy(&head2, d, 2)
        memcpy(&tail2, d + n - 2, 2)
        first = head2 | (<unsigned long long>tail2 << 16)
        last = 0
    h = <unsigned int>(((first * 0x9E3779B97F4A7C15u) ^ (last * 0xC2B2AE3D27D4EB4Fu)
                        ^ <unsigned long long>n) >> 40) & (_NAME_SLOTS - 1)
    slot = &_names[h]
    if slot.first == first and slot.last == last and slot.length == n:
        return <object>slot.text
    text = _ascii(d, n)
    Py_INCREF(text)
    old = slot.text
    slot.text = <PyObject*>text
    slot.first = first
    slot.last = last
    slot.length = n
    Py_XDECREF(old)
    return text


cdef inline Py_UCS4 _code_point(const unsigned char* d, Py_ssize_t* i) noexcept:
    """The character starting at d[i[0]] of valid UTF-8 (its continuation bytes
    were checked to be there), advancing i past it."""
    cdef unsigned char c = d[i[0]]
    cdef Py_UCS4 cp
    if c < 0x80:
        i[0] += 1
        return c
    if c < 0xE0:
        cp = ((c & 0x1F) << 6) | (d[i[0] + 1] & 0x3F)
        i[0] += 2
    elif c < 0xF0:
        cp = ((c & 0x0F) << 12) | ((d[i[0] + 1] & 0x3F) << 6) | (d[i[0] + 2] & 0x3F)
        i[0] += 3
    else:
        cp = (((c & 0x07) << 18) | ((d[i[0] + 1] & 0x3F) << 12)
              | ((d[i[0] + 2] & 0x3F) << 6) | (d[i[0] + 3] & 0x3F))
        i[0] += 4
    return cp


cdef object _utf8_text(const unsigned char* d, Py_ssize_t n):
    """Text of n bytes of UTF-8 that _first_bad_char found valid: counted, then
    written straight into a string of the right width (CPython's decoder
    would check it all again, through its slower general path)."""
    cdef Py_ssize_t i = 0, count = 0, k = 0
    cdef Py_UCS4 cp, widest = 0
    while i < n:
        cp = _code_point(d, &i)
        if cp > widest:
            widest = cp
        count += 1
    text = PyUnicode_New(count, widest)
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    i = 0
    while i < n:  # count characters, as counted above: k stays below count
        PyUnicode_WRITE(kind, data, k, _code_point(d, &i))
        k += 1
    return text


cdef inline object _text(const unsigned char* d, Py_ssize_t n, bint high):
    if high:
        return _utf8_text(d, n)
    return _ascii(d, n)


# --- one piece: decode and check --------------------------------------------------

cdef struct Piece:
    Py_ssize_t length          # decoded bytes in the scratch buffer
    Py_ssize_t first_slash     # raw offset of the first %2F, or -1
    Py_ssize_t first_backslash # raw offset of the first %5C, or -1
    bint high                  # a decoded byte >= 0x80
    bint percent               # a decoded '%' (from %25)
    bint escaped               # the piece held an escape (else decoded == raw)


cdef inline Py_ssize_t _raw_offset(const unsigned char* s, Py_ssize_t start, Py_ssize_t k) noexcept:
    """Where decoded byte k of the piece starting at s[start] comes from. Only
    called with k below the piece's decoded length: each decoded byte is one
    raw byte or one whole escape, so the walk stays inside the piece."""
    cdef Py_ssize_t position = start
    while k > 0:
        position += 3 if s[position] == 0x25 else 1
        k -= 1
    return position


cdef inline int _escaped_byte(const unsigned char* s, Py_ssize_t i, Py_ssize_t end) noexcept:
    """The byte that the escape at s[i] stands for, or -1 when s[i:i + 3] is
    not '%' and two HEXDIG inside s[:end]. Reads s[i + 1] and s[i + 2] only
    after checking i + 2 < end."""
    cdef signed char high, low
    if i + 2 >= end or s[i] != 0x25:
        return -1
    high = _HEX[s[i + 1]]
    low = _HEX[s[i + 2]]
    if (high | low) < 0:
        return -1
    return (high << 4) | low


cdef int _decode(
    const unsigned char* s, Py_ssize_t start, Py_ssize_t end, bint plus,
    unsigned char* out, Piece* piece, int component, Py_ssize_t index, Err* err,
) noexcept:
    """Percent-decode s[start:end] into out; 0, or -1 at a malformed escape.

    Reads s[i] for start <= i < end only: an escape's two digits are read
    only after checking i + 2 < end (a '%' among the last two bytes is a
    malformed escape). Writes at most end - start bytes to out."""
    cdef Py_ssize_t i = start, k = 0
    cdef int escaped
    cdef unsigned char c
    piece.first_slash = -1
    piece.first_backslash = -1
    piece.high = False
    piece.percent = False
    piece.escaped = False
    while i < end:
        c = s[i]
        if c == 0x25:  # '%'
            escaped = _escaped_byte(s, i, end)
            if escaped < 0:
                return _fail(err, R_MALFORMED, component, index, i)
            c = <unsigned char>escaped
            piece.escaped = True
            if c >= 0x80:
                piece.high = True
            elif c == 0x2F:
                if piece.first_slash < 0:
                    piece.first_slash = i
            elif c == 0x5C:
                if piece.first_backslash < 0:
                    piece.first_backslash = i
            elif c == 0x25:
                piece.percent = True
            i += 3
        else:
            if c == 0x2B and plus:  # '+' is space before decoding (form semantics)
                c = 0x20
            i += 1
        out[k] = c
        k += 1
    piece.length = k
    return 0


# The second byte of a UTF-8 sequence, by its lead byte (0xC2..0xF4): the
# range of the Unicode Standard's table of well-formed sequences (3-7), so
# that no overlong form, surrogate or code point past U+10FFFF passes
# (RFC 3629 §4). Any other lead takes no second byte (an empty range).
cdef unsigned char _SECOND_LOW[256]
cdef unsigned char _SECOND_HIGH[256]
for _c in range(256):
    _SECOND_LOW[_c], _SECOND_HIGH[_c] = (0x80, 0xBF) if 0xC2 <= _c <= 0xF4 else (0xFF, 0)
_SECOND_LOW[0xE0] = 0xA0
_SECOND_HIGH[0xED] = 0x9F
_SECOND_LOW[0xF0] = 0x90
_SECOND_HIGH[0xF4] = 0x8F


cdef inline bint _second_byte_fits(unsigned char lead, unsigned char second) noexcept:
    return _SECOND_LOW[lead] <= second <= _SECOND_HIGH[lead]


cdef inline Py_ssize_t _first_bad_char(
    const unsigned char* d, Py_ssize_t n, const unsigned char* ascii,
    const unsigned int* iv, Py_ssize_t iv_n, int* rule,
) noexcept:
    """One pass over decoded text d[:n] for invalid-utf8, then forbidden-char:
    the index of the first byte that starts no valid UTF-8 sequence (RFC 3629
    §4, as CPython's strict decoder reports it), rule R_INVALID_UTF8, else of
    the first character not allowed, rule R_FORBIDDEN; or -1.

    Reads d[i + k] only after checking i + k < n."""
    cdef Py_ssize_t i = 0, forbidden = -1
    cdef unsigned char c, c1
    cdef unsigned int cp
    rule[0] = R_INVALID_UTF8
    while i < n:
        c = d[i]
        if c < 0x80:
            if forbidden < 0 and not ascii[c]:
                forbidden = i
            i += 1
            continue
        if c < 0xC2 or c > 0xF4:
            return i
        if i + 1 >= n:
            return i
        c1 = d[i + 1]
        if not _second_byte_fits(c, c1):
            return i
        if c < 0xE0:
            cp = ((c & 0x1F) << 6) | (c1 & 0x3F)
            if forbidden < 0 and not _in_intervals(iv, iv_n, cp):
                forbidden = i
            i += 2
            continue
        if c < 0xF0:
            if i + 2 >= n or (d[i + 2] & 0xC0) != 0x80:
                return i
            cp = ((c & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (d[i + 2] & 0x3F)
            if forbidden < 0 and not _in_intervals(iv, iv_n, cp):
                forbidden = i
            i += 3
            continue
        if i + 2 >= n or (d[i + 2] & 0xC0) != 0x80:
            return i
        if i + 3 >= n or (d[i + 3] & 0xC0) != 0x80:
            return i
        cp = (((c & 0x07) << 18) | ((c1 & 0x3F) << 12)
              | ((d[i + 2] & 0x3F) << 6) | (d[i + 3] & 0x3F))
        if forbidden < 0 and not _in_intervals(iv, iv_n, cp):
            forbidden = i
        i += 4
    rule[0] = R_FORBIDDEN
    return forbidden


cdef inline Py_ssize_t _forbidden_at(
    const unsigned char* d, Py_ssize_t n, const unsigned char* ascii,
) noexcept:
    """The index of the first byte of ASCII text d[:n] whose character is not
    allowed, or -1. Only ASCII comes here: raw bytes (a policy allows none
    above 0x7E raw) and decoded text without a byte >= 0x80 (text with one
    goes to _first_bad_char); a byte >= 0x80 would count as not allowed."""
    cdef Py_ssize_t i
    for i in range(n):
        if d[i] >= 0x80 or not ascii[d[i]]:
            return i
    return -1


cdef int _check_text(
    const unsigned char* s, Py_ssize_t start, const unsigned char* d, Piece* piece,
    bint raw_clean, const unsigned char* ascii, const unsigned int* iv, Py_ssize_t iv_n,
    int component, Py_ssize_t index, Err* err,
) noexcept:
    """invalid-utf8 (anywhere in the piece), then forbidden-char."""
    cdef Py_ssize_t bad
    cdef int rule = R_FORBIDDEN
    if piece.high:
        bad = _first_bad_char(d, piece.length, ascii, iv, iv_n, &rule)
    elif raw_clean and not piece.escaped:
        return 0  # raw bytes the policy allows, each decoding to an allowed character
    else:
        bad = _forbidden_at(d, piece.length, ascii)
    if bad >= 0:
        return _fail(err, rule, component, index, _raw_offset(s, start, bad))
    return 0


cdef inline bint _has_escape_text(const unsigned char* d, Py_ssize_t n) noexcept:
    """'%' and two HEXDIG in decoded text: double encoding (from %25XX)."""
    cdef Py_ssize_t i = 0
    while i + 2 < n:
        if d[i] == 0x25 and _HEX[d[i + 1]] >= 0 and _HEX[d[i + 2]] >= 0:
            return True
        i += 1
    return False


cdef inline bint _is_dots(const unsigned char* d, Py_ssize_t n) noexcept:
    return (n == 1 and d[0] == 0x2E) or (n == 2 and d[0] == 0x2E and d[1] == 0x2E)


cdef void _kept_parts(
    _Tables t, const unsigned char* d, Py_ssize_t n, bint* dots, bint* empty,
) noexcept:
    """The parts of decoded text that kept separators split it into (a %2F
    under encoded_slash="keep", a '\\' under encoded_backslash="keep"): is
    one "." or "..", is one but the last empty? Reads d[i] for i < n only."""
    cdef Py_ssize_t i = 0, part = 0
    cdef unsigned char c
    while i < n:
        c = d[i]
        if (c == 0x2F and not t.reject_slash) or (c == 0x5C and not t.reject_backslash):
            if _is_dots(d + part, i - part):
                dots[0] = True
            if i == part:
                empty[0] = True
            part = i + 1
        i += 1
    if _is_dots(d + part, n - part):
        dots[0] = True


# --- the walk -----------------------------------------------------------------------

# Pieces whose bounds the walk notes for _LazyTarget (more take the general
# way: a scan of the raw bytes when they are read).
cdef enum:
    _NOTED = 16


cdef struct Noted:
    # Where an accepted origin-form target's pieces are, as the walk found
    # them: kept in the _LazyTarget, so that reading its pieces scans nothing.
    bint noted  # 0 in an object made otherwise (a copy): nothing below is known
    bint path_escaped  # a '%', ';' or '\' in the path
    bint query_escaped  # a '%', or a '+' that is a space, in the query
    Py_ssize_t path_end  # the '?', or n
    Py_ssize_t segments  # how many; bounds noted when <= _NOTED and n <= 0xFFFF
    Py_ssize_t pairs  # non-empty query pairs; the same
    unsigned short slash[_NOTED + 1]  # segment k is s[slash[k] + 1:slash[k + 1]]
    unsigned short pair[2 * _NOTED]  # pair k is s[pair[2k]:pair[2k + 1]]


# Which pass answered a target (_pass_taken, for the tests).
cdef enum:
    _BY_WALK = 0  # rejected by the walk, or built at once
    _BY_QUICK_PASS = 1
    _BY_CAREFUL_PASS = 2


cdef struct Walk:
    const unsigned char* s
    Py_ssize_t n
    unsigned char* scratch
    bint build  # make the texts (else only check: see _LazyTarget)
    int taken  # _BY_WALK, _BY_QUICK_PASS or _BY_CAREFUL_PASS
    Err err
    Noted note


cdef object _segment(Walk* w, _Tables t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t index,
                     bint last, list params_out, Py_ssize_t semi):
    """Check segment ``index`` (raw bytes s[a:b], a <= b <= n, holding an
    escape, a ';' or a '\\') and return its text, or None with w.err set.
    ``semi``: where its first ';' is (b when it has none), or -1: not known."""
    cdef const unsigned char* s = w.s
    cdef unsigned char* d = w.scratch
    cdef Piece piece
    cdef Py_ssize_t name_end, p0, p1, eq
    cdef bint dots = False, empty = False, double = False
    if semi < 0:
        semi = a
        while semi < b and s[semi] != 0x3B:  # the first raw ';' (semi stays <= b)
            semi += 1
    name_end = semi if t.split else b
    if _decode(s, a, name_end, False, d, &piece, C_PATH, index, &w.err) < 0:
        return None
    if _piece_rules(s, a, d, &piece, t, index, &w.err) < 0:
        return None
    if (piece.first_slash >= 0 or piece.first_backslash >= 0
            or (t.kept_backslash_raw and memchr(s + a, 0x5C, name_end - a) != NULL)):
        _kept_parts(t, d, piece.length, &dots, &empty)  # a separator that was kept
    else:
        dots = _is_dots(d, piece.length)
    if not last and piece.length == 0:  # an empty name before ';' ("/;/admin")
        empty = True
    if t.reject_double and piece.percent:
        double = _has_escape_text(d, piece.length)
    text = _text(d, piece.length, piece.high) if w.build else ""
    if t.split:
        pairs = []
        p0 = semi + 1
        while p0 <= b:  # each ';' piece s[p0:p1], p1 <= b
            p1 = p0
            while p1 < b and s[p1] != 0x3B:
                p1 += 1
            if p1 > p0:
                eq = p0
                while eq < p1 and s[eq] != 0x3D:
                    eq += 1
                key = _checked_param(w, t, p0, eq, index, &double)
                if key is None:
                    return None
                if eq < p1:
                    value = _checked_param(w, t, eq + 1, p1, index, &double)
                    if value is None:
                        return None
                else:
                    value = ""
                pairs.append((key, value))
            p0 = p1 + 1
        params_out.append(tuple(pairs))
    if t.reject_dots and not dots and semi < b and semi - a <= 6:
        # "..;x" is ".." to servlet containers, which strip path parameters
        # before resolving dot segments (Tomcat's "..;/" behind a proxy).
        # s[a:semi] passed the escape rule above (it is the name, or part of it).
        if _decode(s, a, semi, False, d, &piece, C_PATH, index, &w.err) == 0:
            dots = _is_dots(d, piece.length)
    if t.reject_dots and dots:
        _fail(&w.err, R_DOT, C_PATH, index, a)
        return None
    if t.reject_empty and empty:
        _fail(&w.err, R_EMPTY, C_PATH, index, a)
        return None
    if double:
        _fail(&w.err, R_DOUBLE, C_PATH, index, a)
        return None
    return text


cdef object _checked_param(Walk* w, _Tables t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t index,
                           bint* double):
    """A matrix parameter's key or value: the path piece rules; its text or None."""
    cdef Piece piece
    cdef unsigned char* d = w.scratch
    if _decode(w.s, a, b, False, d, &piece, C_PATH, index, &w.err) < 0:
        return None
    if _piece_rules(w.s, a, d, &piece, t, index, &w.err) < 0:
        return None
    if t.reject_double and piece.percent and _has_escape_text(d, piece.length):
        double[0] = True
    return _text(d, piece.length, piece.high)


cdef int _piece_rules(const unsigned char* s, Py_ssize_t a, const unsigned char* d,
                      Piece* piece, _Tables t, Py_ssize_t index, Err* err) noexcept:
    """A path piece: encoded-slash, encoded-backslash, invalid-utf8, forbidden-char."""
    if piece.first_slash >= 0 and t.reject_slash:
        return _fail(err, R_ENCODED_SLASH, C_PATH, index, piece.first_slash)
    if piece.first_backslash >= 0 and t.reject_backslash:
        return _fail(err, R_ENCODED_BACKSLASH, C_PATH, index, piece.first_backslash)
    return _check_text(s, a, d, piece, t.path_raw_clean, t.path_ascii, t.path_iv, t.path_iv_n,
                       C_PATH, index, err)


cdef object _query_piece(Walk* w, _Tables t, Py_ssize_t a, Py_ssize_t b, Py_ssize_t index,
                         bint plain):
    """A query name or value s[a:b]: its text, or None with w.err set.
    ``plain``: the query holds no escape and no '+' to turn into space."""
    cdef Piece piece
    cdef Py_ssize_t bad
    if plain:
        if not t.query_raw_clean:
            bad = _forbidden_at(w.s + a, b - a, t.query_ascii)
            if bad >= 0:
                _fail(&w.err, R_FORBIDDEN, C_QUERY, index, a + bad)
                return None
        return _ascii(w.s + a, b - a) if w.build else ""
    if _decode(w.s, a, b, t.plus, w.scratch, &piece, C_QUERY, index, &w.err) < 0:
        return None
    if _check_text(w.s, a, w.scratch, &piece, t.query_raw_clean, t.query_ascii,
                   t.query_iv, t.query_iv_n, C_QUERY, index, &w.err) < 0:
        return None
    return _text(w.scratch, piece.length, piece.high) if w.build else ""


cdef object _authority(Walk* w, _Tables t, Py_ssize_t start, Py_ssize_t end):
    """Check the authority s[start:end] (end <= n) of an absolute-form target:
    RFC 3986 §3.2.2-3.2.3 without userinfo (RFC 9110 §4.2.4); a reg-name's
    escapes as a path segment's, and always the encoded-slash rules. Its
    text with escapes decoded, or None with w.err set."""
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t i = start, host_end, first, k
    cdef long port = 0
    cdef Piece piece
    cdef unsigned char* d = w.scratch
    cdef bint reg_name = False
    if i < end and s[i] == 0x5B:  # '[' IP-literal
        i += 1
        first = i
        while i < end and _IPV6[s[i]]:
            i += 1
        if i == first or i >= end or s[i] != 0x5D:
            # Not an IPv6address: an IPvFuture, "v" 1*HEXDIG "." 1*(...)
            i = first
            if i < end and (s[i] == 0x76 or s[i] == 0x56):
                i += 1
                first = i
                while i < end and _HEX[s[i]] >= 0:
                    i += 1
                if i > first and i < end and s[i] == 0x2E:
                    i += 1
                    first = i
                    while i < end and _FUTURE[s[i]]:
                        i += 1
                    if i == first:
                        i = end + 1
                else:
                    i = end + 1
            else:
                i = end + 1
            if i >= end or s[i] != 0x5D:
                _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
                return None
        i += 1  # the ']'
    else:
        while i < end and _REG_NAME[s[i]]:
            i += 1
        if i == start:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
        reg_name = True
    host_end = i
    if i < end:
        # port = *DIGIT, here at most five and at most 65535 (16 bits).
        if s[i] != 0x3A:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
        i += 1
        first = i
        while i < end and 0x30 <= s[i] <= 0x39 and i - first < 6:
            port = port * 10 + (s[i] - 0x30)
            i += 1
        if i < end or i - first > 5 or port > 65535:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
            return None
    rest = (<bytes>s[host_end:end]).decode("ascii")
    if not reg_name:
        return (<bytes>s[start:host_end]).decode("ascii") + rest
    if _decode(s, start, host_end, False, d, &piece, C_TARGET, -1, &w.err) < 0:
        return None
    if piece.first_slash >= 0:
        _fail(&w.err, R_ENCODED_SLASH, C_TARGET, -1, piece.first_slash)
        return None
    if piece.first_backslash >= 0:
        _fail(&w.err, R_ENCODED_BACKSLASH, C_TARGET, -1, piece.first_backslash)
        return None
    if _check_text(s, start, d, &piece, False, t.path_ascii, t.path_iv, t.path_iv_n,
                   C_TARGET, -1, &w.err) < 0:
        return None
    for k in range(piece.length):
        if _HOST_DELIMS[d[k]]:
            _fail(&w.err, R_BAD_FORM, C_TARGET, -1, _raw_offset(s, start, k))
            return None
    return _text(d, piece.length, piece.high) + rest


cdef int _check_pieces(Walk* w, _Tables t, Py_ssize_t path_start, Py_ssize_t path_end,
                       Py_ssize_t question, Py_ssize_t pairs, bint query_plain) except -2:
    """The segment and pair rules of an origin-form target, outside "split"
    mode, making no text (w.build is off): 0, or -1 with w.err set. The same
    walks as _walk's, s[a:b] with a <= b <= path_end, then <= n."""
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t n = w.n, a, b, eq, index = 0
    cdef unsigned char c
    cdef Py_ssize_t semi
    cdef bint special, name_plain, value_plain
    a = path_start + 1
    while path_start >= 0:  # path_start < 0: the path was checked already
        b = a
        special = False
        semi = -1
        while b < path_end and s[b] != 0x2F:  # s[a:b]: does it hold '%', ';' or '\\'?
            if not t.path_plain[s[b]]:
                special = True
                if s[b] == 0x3B and semi < 0:
                    semi = b  # the first ';', for _segment
            b += 1
        if semi < 0:
            semi = b
        if a == b:
            if b < path_end and t.reject_empty:
                return _fail(&w.err, R_EMPTY, C_PATH, index, a)
        elif special:
            if _segment(w, t, a, b, index, b == path_end, None, semi) is None:
                return -1
        else:
            if not t.path_raw_clean:
                eq = _forbidden_at(s + a, b - a, t.path_ascii)
                if eq >= 0:
                    return _fail(&w.err, R_FORBIDDEN, C_PATH, index, a + eq)
            if t.reject_dots and _is_dots(s + a, b - a):
                return _fail(&w.err, R_DOT, C_PATH, index, a)
        index += 1
        if b == path_end:
            break
        a = b + 1
    if not pairs or (query_plain and t.query_raw_clean):
        return 0  # nothing in the query can break a rule
    index = 0
    a = question + 1
    while index < pairs and a <= n:
        # The pair s[a:b] (b <= n), its name up to the first '=' (eq), and
        # whether the name and the value hold an escape or a '+' to decode.
        b = a
        eq = -1
        name_plain = value_plain = True
        while b < n and s[b] != 0x26:
            c = s[b]
            if c == 0x3D and eq < 0:
                eq = b
            elif c == 0x25 or (c == 0x2B and t.plus):
                if eq < 0:
                    name_plain = False
                else:
                    value_plain = False
            b += 1
        if b > a:
            if eq < 0:
                eq = b
            # A piece of raw bytes only needs a look when the policy allows
            # a raw byte that decodes to a character it does not allow.
            if not (name_plain and t.query_raw_clean):
                if _query_piece(w, t, a, eq, index, name_plain) is None:
                    return -1
            if eq < b and not (value_plain and t.query_raw_clean):
                if _query_piece(w, t, eq + 1, b, index, value_plain) is None:
                    return -1
            index += 1
        a = b + 1
    return 0


# --- the quick pass ----------------------------------------------------------------

cdef inline Py_ssize_t _quick_char(
    const unsigned char* s, Py_ssize_t i, Py_ssize_t end, const unsigned char* ascii,
    const unsigned int* iv, Py_ssize_t iv_n,
) noexcept:
    """The character escaped at s[i] ('%'): one escape of ASCII, or two to
    four escapes of one UTF-8 sequence (RFC 3629 §4: no overlong form, no
    surrogate, nothing past U+10FFFF). Where it ends, when it is all that and
    allowed (``ascii`` below 0x80, the intervals above); -1 otherwise. Every
    escape is read through _escaped_byte, inside s[:end]."""
    cdef int c = _escaped_byte(s, i, end), c1, c2, c3
    cdef unsigned int cp
    if c < 0x80:
        return i + 3 if c >= 0 and ascii[c] else -1
    if c < 0xC2 or c > 0xF4:
        return -1
    c1 = _escaped_byte(s, i + 3, end)
    if c1 < 0 or not _second_byte_fits(c, c1):
        return -1
    if c < 0xE0:
        cp = ((c & 0x1F) << 6) | (c1 & 0x3F)
        i += 6
    else:
        c2 = _escaped_byte(s, i + 6, end)
        if c2 < 0 or (c2 & 0xC0) != 0x80:
            return -1
        if c < 0xF0:
            cp = ((c & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F)
            i += 9
        else:
            c3 = _escaped_byte(s, i + 9, end)
            if c3 < 0 or (c3 & 0xC0) != 0x80:
                return -1
            cp = ((c & 0x07) << 18) | ((c1 & 0x3F) << 12) | ((c2 & 0x3F) << 6) | (c3 & 0x3F)
            i += 12
    return i if _in_intervals(iv, iv_n, cp) else -1


cdef bint _accepted_quickly(Walk* w, _Tables t, Py_ssize_t path_start, Py_ssize_t path_end,
                            Py_ssize_t question, bint query_plain, bint path_doubt) noexcept:
    """What _check_pieces checks, for the targets clients send: True when
    every rule holds for sure; False when something needs the careful pass,
    which names the rule (one pass over the bytes, where the careful one
    decodes each piece into scratch and checks it again).

    It only accepts, so it needs no rule order: it gives up at anything that
    has a rule of its own (an escaped '/', '\\', '%' or '.', a raw ';' or
    '\\'), at an escape that is malformed, not UTF-8 or not allowed, at a
    UTF-8 sequence that is not in consecutive escapes of one piece, and
    where the walk noted an empty or dot segment. Raw bytes are the walk's
    (raw-char): under a policy where each decodes to an allowed character
    (path_raw_clean, query_raw_clean) they need nothing more. Same
    arguments as _check_pieces: path_start < 0 when the path needs no look."""
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t i
    if path_start >= 0:
        if path_doubt or not t.path_raw_clean:
            return False
        i = path_start
        while i < path_end:  # s[i] for i < path_end; escapes inside s[:path_end]
            if t.path_quick[s[i]]:
                i += 1
            else:
                i = _quick_char(s, i, path_end, t.path_quick_ascii, t.path_iv, t.path_iv_n)
                if i < 0:
                    return False
    if question >= 0 and not (query_plain and t.query_raw_clean):
        if not t.query_raw_clean:
            return False
        i = question + 1
        while i < w.n:  # s[i] for i < n; escapes inside s[:n]
            if t.query_quick[s[i]]:
                i += 1
            else:
                i = _quick_char(s, i, w.n, t.query_ascii, t.query_iv, t.query_iv_n)
                if i < 0:
                    return False
    return True


# --- pieces made when first read ---------------------------------------------------

cdef object _lazy_c_type = None  # _LazyTarget when it is the type made from a spec
cdef Py_ssize_t _NOTE_OFFSET = 0  # where a _LazyTarget's Noted is, past Target's slots
# Target's own way of making the pieces from the raw bytes, for what the walk
# did not make (and so has no notes).
_target_segments = Target.segments.fget
_target_query = Target.query.fget


cdef class _Pieces:
    """A read-only attribute of _LazyTarget that makes its value on first
    read: a descriptor whose __get__ is C (a property would call a function)."""

    cdef bint query

    def __cinit__(self, bint query):
        self.query = query

    def __get__(self, target, owner):
        if target is None:
            return self
        if type(target) is not _lazy_c_type or not _noted(target).noted:
            # Not made by the walk: a copy made through the constructor, the
            # plain subclass, or any object handed to this attribute. Target's
            # own way reads no C data (and fails on what is not a Target).
            return _target_query(target) if self.query else _target_segments(target)
        return _lazy_query(target) if self.query else _lazy_segments(target)


# The attribute names as the interpreter hands them over (interned).
cdef str _SEGMENTS_NAME = "segments"
cdef str _QUERY_NAME = "query"


cdef object _lazy_getattr(object target, object name):
    """tp_getattro of _LazyTarget: its segments and query, the attributes a
    handler reads, without the generic lookup (the type's MRO, then the
    descriptor's __get__: a plain target parsed and both read went from
    4,798 to 4,538 instructions). Anything else, and a name that is not the
    interned one, takes the generic way to the same answer (the _Pieces
    descriptors)."""
    if name is _SEGMENTS_NAME:
        if _noted(target).noted:
            return _lazy_segments(target)
    elif name is _QUERY_NAME:
        if _noted(target).noted:
            return _lazy_query(target)
    return PyObject_GenericGetAttr(target, name)


def _make_lazy_target_type():
    """_LazyTarget: a Target whose segments and query are made when first
    read, in C (an accepted origin-form target, outside "split" mode).
    Everything else is Target's. A type of its own (see urlguard_lazy_dealloc)
    where Target's slots are written directly; a plain subclass otherwise."""
    global _lazy_c_type, _NOTE_OFFSET
    cdef Py_ssize_t offsets[6]
    if _fast_target:
        offsets[:] = [_T_RAW, _T_SEGMENTS, _T_QUERY, _T_PARAMS, _T_AUTHORITY, _T_PLUS]
        lazy = _lazy_type_new(Target, offsets, sizeof(Noted), <getattrofunc>_lazy_getattr)
        _NOTE_OFFSET = (<PyTypeObject*>Target).tp_basicsize
        _lazy_c_type = lazy
    else:
        lazy = type("_LazyTarget", (Target,), {"__slots__": (), "__module__": __name__})
    lazy.segments = _Pieces(False)
    lazy.query = _Pieces(True)
    lazy.__reduce__ = _reduce_lazy_target
    return lazy


def _reduce_lazy_target(target):
    """A copy or a pickle of a _LazyTarget is one made by the constructor,
    with its pieces made: the notes past Target's slots are not state to
    carry (the default reduction refuses an object with C data)."""
    return (type(target), (target.raw, target.segments, target.query))


cdef object _new_lazy_target(bytes raw, bint plus, const Noted* note):
    if _lazy_c_type is None:
        return _LazyTarget(raw, plus_as_space=plus)
    obj = <object>_lazy_alloc()
    Py_XDECREF(<PyObject*>obj)  # _lazy_alloc gave a new reference; <object> took one more
    _store(obj, _T_RAW, raw)
    _store(obj, _T_SEGMENTS, None)
    _store(obj, _T_QUERY, None)
    _store(obj, _T_PARAMS, None)
    _store(obj, _T_AUTHORITY, None)
    _store(obj, _T_PLUS, True if plus else False)
    memcpy(_noted(obj), note, sizeof(Noted))
    PyObject_GC_Track(<PyObject*>obj)
    return obj


cdef inline Noted* _noted(object target) noexcept:
    return <Noted*>((<char*><PyObject*>target) + _NOTE_OFFSET)


cdef inline PyObject** _slot(object obj, Py_ssize_t offset) noexcept:
    return <PyObject**>((<char*><PyObject*>obj) + offset)


cdef object _replace_slot(object obj, Py_ssize_t offset, object value):
    cdef PyObject** slot = _slot(obj, offset)
    cdef PyObject* old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject*>value
    Py_XDECREF(old)
    return value


cdef object _piece_text(const unsigned char* s, Py_ssize_t a, Py_ssize_t b, bint plus,
                        unsigned char* scratch, bint name=False):
    """The text of an accepted piece s[a:b] (its escapes and UTF-8 checked);
    ``name``: a query name (see _name)."""
    cdef Piece piece
    cdef Err err
    if memchr(s + a, 0x25, b - a) == NULL and not (plus and memchr(s + a, 0x2B, b - a) != NULL):
        # Raw bytes allowed in a target are ASCII.
        return _name(s + a, b - a) if name else _ascii(s + a, b - a)
    _decode(s, a, b, plus, scratch, &piece, C_PATH, 0, &err)
    return _text(scratch, piece.length, piece.high)


# The notes are read only in a _LazyTarget the walk made, from a target of at
# most 0xFFFF bytes with at most _NOTED pieces of each kind: there every
# bound is exact and 0 <= slash[k] < slash[k + 1] <= path_end <= n, and
# path_end < pair[2k] < pair[2k + 1] <= n (tests/test_parser_c.py puts
# targets of 0xFFFF and 0x10000 bytes and 16 and 17 pieces at those edges).

cdef object _lazy_segments(object target):
    """The segments of a _LazyTarget the walk made (with its notes)."""
    value = <object>_slot(target, _T_SEGMENTS)[0]
    if value is not None:
        return value
    cdef const Noted* note = _noted(target)
    cdef bytes raw = <bytes>_slot(target, _T_RAW)[0]
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(raw)
    cdef Py_ssize_t count = note.segments, k
    cdef unsigned char stack[512]
    cdef unsigned char* scratch = stack
    if count > _NOTED or PyBytes_GET_SIZE(raw) > 0xFFFF:
        return _replace_slot(target, _T_SEGMENTS, _decoded_segments(s, note.path_end, count))
    segments = PyTuple_New(count)
    if not note.path_escaped:
        for k in range(count):  # segment k is s[slash[k] + 1:slash[k + 1]]
            text = _ascii(s + note.slash[k] + 1, note.slash[k + 1] - note.slash[k] - 1)
            Py_INCREF(text)
            PyTuple_SET_ITEM(segments, k, text)
        return _replace_slot(target, _T_SEGMENTS, segments)
    if note.path_end > 512:  # decoding never lengthens a piece
        scratch = <unsigned char*>PyMem_Malloc(note.path_end)
        if scratch == NULL:
            raise MemoryError()
    try:
        for k in range(count):
            text = _piece_text(s, note.slash[k] + 1, note.slash[k + 1], False, scratch)
            Py_INCREF(text)
            PyTuple_SET_ITEM(segments, k, text)
    finally:
        if scratch != stack:
            PyMem_Free(scratch)
    return _replace_slot(target, _T_SEGMENTS, segments)


cdef tuple _decoded_segments(const unsigned char* s, Py_ssize_t end, Py_ssize_t count):
    """The ``count`` segments of the path s[0:end], escapes decoded."""
    cdef unsigned char stack[512]
    cdef unsigned char* scratch = stack
    cdef Py_ssize_t a = 1, b, index = 0
    if end > 512:
        scratch = <unsigned char*>PyMem_Malloc(end)
        if scratch == NULL:
            raise MemoryError()
    try:
        segments = PyTuple_New(count)
        while index < count:  # s[a:b], 1 <= a <= b <= end
            b = a
            while b < end and s[b] != 0x2F:
                b += 1
            text = _piece_text(s, a, b, False, scratch)
            Py_INCREF(text)
            PyTuple_SET_ITEM(segments, index, text)
            index += 1
            a = b + 1
    finally:
        if scratch != stack:
            PyMem_Free(scratch)
    return segments


cdef object _lazy_query(object target):
    """The query pairs of a _LazyTarget the walk made (with its notes)."""
    value = <object>_slot(target, _T_QUERY)[0]
    if value is not None:
        return value
    cdef const Noted* note = _noted(target)
    cdef bytes raw = <bytes>_slot(target, _T_RAW)[0]
    cdef bint plus = <object>_slot(target, _T_PLUS)[0] is True
    cdef const unsigned char* s = <const unsigned char*>PyBytes_AS_STRING(raw)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(raw), count = note.pairs, k, a, b, eq
    cdef const void* found
    cdef unsigned char stack[512]
    cdef unsigned char* scratch = stack
    if count == 0:
        return _replace_slot(target, _T_QUERY, ())
    if count > _NOTED or n > 0xFFFF:
        return _replace_slot(
            target, _T_QUERY, _decoded_query(s, n, note.path_end + 1, count, plus))
    if note.query_escaped and n - note.path_end > 512:  # decoding never lengthens a piece
        scratch = <unsigned char*>PyMem_Malloc(n - note.path_end)
        if scratch == NULL:
            raise MemoryError()
    try:
        query = PyTuple_New(count)
        for k in range(count):
            # Pair k is s[a:b], a < b <= n; its name ends at the first '='.
            a = note.pair[2 * k]
            b = note.pair[2 * k + 1]
            found = memchr(s + a, 0x3D, b - a)
            eq = <const unsigned char*>found - s if found != NULL else b
            if note.query_escaped:
                name = _piece_text(s, a, eq, plus, scratch, True)
                value = _piece_text(s, eq + 1, b, plus, scratch) if eq < b else ""
            else:
                name = _name(s + a, eq - a)
                value = _ascii(s + eq + 1, b - eq - 1) if eq < b else <object>_single[128]
            pair = PyTuple_New(2)
            Py_INCREF(name)
            PyTuple_SET_ITEM(pair, 0, name)
            Py_INCREF(value)
            PyTuple_SET_ITEM(pair, 1, value)
            Py_INCREF(pair)
            PyTuple_SET_ITEM(query, k, pair)
    finally:
        if scratch != stack:
            PyMem_Free(scratch)
    return _replace_slot(target, _T_QUERY, query)


cdef tuple _decoded_query(const unsigned char* s, Py_ssize_t n, Py_ssize_t start,
                          Py_ssize_t count, bint plus):
    """The ``count`` pairs of the query s[start:n], escapes (and '+') decoded."""
    cdef unsigned char stack[512]
    cdef unsigned char* scratch = stack
    cdef Py_ssize_t a, b, eq, index = 0
    if n - start > 512:
        scratch = <unsigned char*>PyMem_Malloc(n - start)
        if scratch == NULL:
            raise MemoryError()
    try:
        query = PyTuple_New(count)
        a = start
        while index < count and a <= n:
            b = a
            while b < n and s[b] != 0x26:
                b += 1
            if b > a:
                eq = a
                while eq < b and s[eq] != 0x3D:
                    eq += 1
                name = _piece_text(s, a, eq, plus, scratch, True)
                value = _piece_text(s, eq + 1, b, plus, scratch) if eq < b else ""
                pair = (name, value)
                Py_INCREF(pair)
                PyTuple_SET_ITEM(query, index, pair)
                index += 1
            a = b + 1
    finally:
        if scratch != stack:
            PyMem_Free(scratch)
    return query


cdef bint _fragment(Walk* w) noexcept:
    """The fragment rule (RFC 9110 §7.1: a fragment is never sent): True,
    with w.err set, when the target holds a '#'."""
    cdef const void* found = memchr(w.s, 0x23, w.n)
    if found == NULL:
        return False
    _fail(&w.err, R_FRAGMENT, C_TARGET, -1, <const unsigned char*>found - w.s)
    return True


cdef object _walk(Walk* w, _Tables t, bytes raw):
    """Every rule, in the reference's order; the Target, or None with w.err set."""
    cdef const unsigned char* s = w.s
    cdef Py_ssize_t n = w.n
    cdef Py_ssize_t i, path_start, path_end, question, slashes, too_many_path = -1
    cdef Py_ssize_t pairs, too_many_query = -1, a, b, eq, index, piece_start
    cdef Py_ssize_t segment_start = 0, bad_index = -1, bad_offset = 0
    cdef int bad_rule = 0
    cdef bint path_special = False, query_plain = True
    cdef unsigned char c
    cdef const unsigned char* plain
    cdef tuple segments, query
    authority = None

    if n > t.max_length:
        return _reject(&w.err, R_TOO_LONG, C_TARGET, -1, t.max_length)

    if n > 0 and s[0] == 0x2F:
        # A '#' stops the scans below (it is never allowed raw), which then
        # look for the first one: the fragment rule comes before raw-char.
        path_start = 0
    else:
        if _fragment(w):  # RFC 9110 §7.1: a fragment is never sent
            return None
        # RFC 9112 §3.2.2 absolute-form, for the schemes of RFC 9110 §4.2, in
        # any case (RFC 3986 §3.1). n >= 7 before s[0..4]; i + 3 <= n before s[i..i+2].
        if (n < 7 or (s[0] | 0x20) != 0x68 or (s[1] | 0x20) != 0x74
                or (s[2] | 0x20) != 0x74 or (s[3] | 0x20) != 0x70):
            return _reject(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
        i = 5 if (s[4] | 0x20) == 0x73 else 4
        if i + 3 > n or s[i] != 0x3A or s[i + 1] != 0x2F or s[i + 2] != 0x2F:
            return _reject(&w.err, R_BAD_FORM, C_TARGET, -1, 0)
        a = i + 3
        i = a
        while i < n and s[i] != 0x2F and s[i] != 0x3F:
            i += 1
        authority = _authority(w, t, a, i)
        if authority is None:
            return None
        path_start = i

    # raw-char in the path, counting '/' (one per segment) on the way, and
    # noting the first empty or dot segment among segments of ordinary bytes
    # (what _check_pieces would find in a path without '%', ';' or '\').
    # The inner loop skips ordinary bytes one at a time (i < n): segments
    # are short, and a test of eight bytes at once mostly fails on a '/'.
    plain = t.path_plain
    i = path_start
    slashes = 0
    while True:
        while i < n and plain[s[i]]:
            i += 1
        c = s[i] if i < n else 0x3F  # the end: as if the query began
        if c == 0x2F or c == 0x3F:
            # segment slashes - 1 is s[segment_start:i] (none before the first '/')
            if slashes and bad_index < 0 and i - segment_start <= 2:
                if i == segment_start:
                    if c == 0x2F and t.reject_empty:  # an empty last segment is allowed
                        bad_index, bad_rule, bad_offset = slashes - 1, R_EMPTY, segment_start
                elif t.reject_dots and _is_dots(s + segment_start, i - segment_start):
                    bad_index, bad_rule, bad_offset = slashes - 1, R_DOT, segment_start
            if c == 0x3F:
                break
            if slashes == t.max_segments:
                too_many_path = i
            if slashes < _NOTED:
                w.note.slash[slashes] = <unsigned short>i  # kept only when n <= 0xFFFF
            slashes += 1
            segment_start = i + 1
        elif not t.path_raw[c]:
            if _fragment(w):
                return None
            return _reject(&w.err, R_RAW_CHAR, C_PATH, slashes - 1 if slashes else 0, i)
        else:  # '%', ';' or '\': the segment needs the careful look
            path_special = True
        i += 1
    path_end = i
    question = i if i < n else -1

    # raw-char in the query, counting its non-empty pairs. Query values run
    # longer: ordinary bytes are skipped eight at a time while s[i..i+7] are
    # inside the buffer (i + 8 <= n), then one at a time (i < n).
    pairs = 0
    if question >= 0:
        plain = t.query_plain
        i = piece_start = question + 1
        while True:
            while i + 8 <= n and (plain[s[i]] & plain[s[i + 1]] & plain[s[i + 2]]
                                  & plain[s[i + 3]] & plain[s[i + 4]] & plain[s[i + 5]]
                                  & plain[s[i + 6]] & plain[s[i + 7]]):
                i += 8
            while i < n and plain[s[i]]:
                i += 1
            if i < n and s[i] != 0x26:
                c = s[i]
                if not t.query_raw[c]:
                    if _fragment(w):
                        return None
                    return _reject(&w.err, R_RAW_CHAR, C_QUERY, pairs, i)
                if c == 0x25 or (c == 0x2B and t.plus):
                    query_plain = False
                i += 1
                continue
            if i > piece_start:  # a pair ends at '&' or at the end
                if pairs == t.max_params:
                    too_many_query = piece_start
                if pairs < _NOTED:
                    w.note.pair[2 * pairs] = <unsigned short>piece_start
                    w.note.pair[2 * pairs + 1] = <unsigned short>i
                pairs += 1
            if i >= n:
                break
            i += 1
            piece_start = i

    if path_end == path_start:  # RFC 9112 §3.2.2: an empty path means "/"
        slashes = 1
    if slashes > t.max_segments:
        return _reject(&w.err, R_TOO_MANY, C_PATH, t.max_segments, too_many_path)
    if pairs > t.max_params:
        return _reject(&w.err, R_TOO_MANY, C_QUERY, t.max_params, too_many_query)

    # An origin-form target outside "split" mode is only checked here: its
    # pieces are made when first read (_LazyTarget), so a handler that never
    # reads them never pays for them.
    w.build = t.split or authority is not None
    if not w.build:
        if not path_special and t.path_raw_clean:
            # Every segment is ordinary bytes the policy allows: the scan
            # above applied the only rules left (empty and dot segments).
            if bad_index >= 0:
                return _reject(&w.err, bad_rule, C_PATH, bad_index, bad_offset)
            path_start = path_end = -1  # nothing left to check in the path
        # From question, not path_end: path_end is -1 when the path needs no more look.
        w.note.noted = True
        w.note.path_escaped = path_special
        w.note.query_escaped = not query_plain
        w.note.path_end = question if question >= 0 else n
        w.note.segments = slashes
        w.note.pairs = pairs
        if slashes <= _NOTED:
            w.note.slash[slashes] = <unsigned short>w.note.path_end
        if _accepted_quickly(w, t, path_start, path_end, question, query_plain, bad_index >= 0):
            w.taken = _BY_QUICK_PASS
        else:
            w.taken = _BY_CAREFUL_PASS
            if _check_pieces(w, t, path_start, path_end, question, pairs, query_plain) < 0:
                return None
        return _new_lazy_target(raw, t.plus, &w.note)

    # Segment by segment: s[a:b], a <= b <= path_end.
    segments = PyTuple_New(slashes)
    params = [] if t.split else None
    if path_end == path_start:
        text = ""
        Py_INCREF(text)
        PyTuple_SET_ITEM(segments, 0, text)
        if t.split:
            params.append(())
    else:
        a = path_start + 1
        index = 0
        while True:
            b = a
            while b < path_end and s[b] != 0x2F:
                b += 1
            if a == b:
                if b < path_end and t.reject_empty:
                    return _reject(&w.err, R_EMPTY, C_PATH, index, a)
                text = ""
                if t.split:
                    params.append(())
            elif path_special:
                text = _segment(w, t, a, b, index, b == path_end, params, -1)
                if text is None:
                    return None
            else:
                # Raw bytes only, no escape, ';' or '\': characters, then dots.
                if not t.path_raw_clean:
                    eq = _forbidden_at(s + a, b - a, t.path_ascii)
                    if eq >= 0:
                        return _reject(&w.err, R_FORBIDDEN, C_PATH, index, a + eq)
                if t.reject_dots and _is_dots(s + a, b - a):
                    return _reject(&w.err, R_DOT, C_PATH, index, a)
                text = _ascii(s + a, b - a)
                if t.split:
                    params.append(())
            Py_INCREF(text)
            PyTuple_SET_ITEM(segments, index, text)
            index += 1
            if b == path_end:
                break
            a = b + 1

    # Pair by pair: s[a:b], a <= b <= n; the name before the first '='.
    query = PyTuple_New(pairs)
    if pairs:
        index = 0
        a = question + 1
        while index < pairs and a <= n:
            b = a
            while b < n and s[b] != 0x26:
                b += 1
            if b > a:
                eq = a
                while eq < b and s[eq] != 0x3D:
                    eq += 1
                name = _query_piece(w, t, a, eq, index, query_plain)
                if name is None:
                    return None
                if eq < b:
                    value = _query_piece(w, t, eq + 1, b, index, query_plain)
                    if value is None:
                        return None
                else:
                    value = ""
                pair = (name, value)
                Py_INCREF(pair)
                PyTuple_SET_ITEM(query, index, pair)
                index += 1
            a = b + 1

    return _new_target(
        raw, segments, query, tuple(params) if t.split else None, authority, t.plus
    )


cdef bytes _as_bytes(object raw):
    if isinstance(raw, str):
        # Lone surrogates pass through, to be rejected as raw bytes >= 0x80.
        return raw.encode("utf-8", "surrogatepass")
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw)
    raise TypeError(f"parse_target() takes bytes or str, not {type(raw).__name__}")


cdef object _parse(bytes raw, _Tables t, Walk* w):
    """The Target, or None with w.err set (raised by the caller: see the module
    docstring). The caller reads w.err and w.taken after; w.scratch, which
    may be this frame's buffer, only during."""
    cdef unsigned char stack[512]
    w.s = <const unsigned char*>PyBytes_AS_STRING(raw)
    w.n = PyBytes_GET_SIZE(raw)
    w.taken = _BY_WALK
    # Decoding never lengthens a piece: n bytes of scratch are enough.
    if w.n <= 512:
        w.scratch = stack
    else:
        w.scratch = <unsigned char*>PyMem_Malloc(w.n)
        if w.scratch == NULL:
            raise MemoryError()
    try:
        return _walk(w, t, raw)
    finally:
        if w.scratch != stack:
            PyMem_Free(w.scratch)


def parse_target(raw, policy=None):
    """Split, decode and check a raw request target; return its decoded pieces.

    The compiled twin of ``urlguard._parser_py.parse_target``: same arguments,
    same result, same ``InvalidTarget``."""
    cdef Walk w
    cdef _Tables t = _tables_for(policy)
    if type(raw) is not bytes:
        raw = _as_bytes(raw)
    result = _parse(<bytes>raw, t, &w)
    if result is None:
        raise _new_error(&w.err)
    return result


def parse_split_target(raw_path, query, policy):
    """``parse_target(raw_path + b"?" + query, policy)`` (of ``raw_path`` alone
    when ``query`` is empty), for servers that hand the two over apart (ASGI)."""
    if type(raw_path) is not bytes:
        raw_path = _as_bytes(raw_path)
    if type(query) is not bytes:
        query = _as_bytes(query)
    cdef _Tables t = _tables_for(policy)
    cdef Walk w
    result = _parse_split(<bytes>raw_path, <bytes>query, t, &w)
    if result is None:
        raise _new_error(&w.err)
    return result


cdef object _parse_split(bytes raw_path, bytes query, _Tables t, Walk* w):
    """_parse of raw_path + b"?" + query, of raw_path alone when query is empty."""
    cdef Py_ssize_t path_size = PyBytes_GET_SIZE(raw_path)
    cdef Py_ssize_t query_size = PyBytes_GET_SIZE(query)
    cdef char* joined
    if not query_size:
        return _parse(raw_path, t, w)
    # raw_path + b"?" + query, written into one new bytes object.
    raw = PyBytes_FromStringAndSize(NULL, path_size + 1 + query_size)
    joined = PyBytes_AS_STRING(raw)
    memcpy(joined, PyBytes_AS_STRING(raw_path), path_size)
    joined[path_size] = 0x3F
    memcpy(joined + path_size + 1, PyBytes_AS_STRING(query), query_size)
    return _parse(<bytes>raw, t, w)


def _pass_taken(raw, policy=None):
    """Which pass answered ``parse_target(raw, policy)``: "walk" (rejected
    by the walk, or built at once), "quick" or "careful" (for the tests)."""
    cdef Walk w
    cdef _Tables t = _tables_for(policy)
    if type(raw) is not bytes:
        raw = _as_bytes(raw)
    _parse(<bytes>raw, t, &w)
    return ("walk", "quick", "careful")[w.taken]


# --- the guard's decision -------------------------------------------------------------

def decider_for(guard):
    """What answers each request for ``guard`` (a ``urlguard._guard.Guard``):
    a ``_Decider``, its ``decide`` in C. The reference's twin returns the
    guard itself."""
    return _Decider(guard)


cdef class _Decider:
    """``Guard.decide``, compiled, for the requests a guard sees most.

    The adapters call ``decide`` on every request. As a Python method it is
    a frame of its own (set up and cleared: ~140 instructions on CPython
    3.11, before any of its work); here it is one C call that reaches the
    parser without another Python call. It takes what ``Guard.decide``
    takes and answers what it answers: a raw target given as bytes is
    unmounted, matched to its route, parsed and stored, or handed with its
    violation to the guard's ``decide_invalid`` (which logs, counts, calls
    the hooks and makes the answer); anything else (no raw target, or not
    bytes) goes to ``Guard.decide`` itself. tests/test_parser_c.py holds it
    to ``Guard.decide`` on generated requests; tests/test_guard.py and the
    adapters' tests ask every decision through it.
    """

    cdef object _key
    cdef object _decide
    cdef object _decide_invalid
    cdef object _select
    cdef bint _routed
    cdef _Tables _tables

    def __init__(self, guard):
        from ._guard import TARGET_KEY  # not at import: _guard imports the parser
        self._key = TARGET_KEY
        self._decide = guard.decide
        self._decide_invalid = guard.decide_invalid
        self._select = guard.table.select
        self._routed = guard.routed
        self._tables = _tables_for(guard.policy)

    def decide(self, raw, query, mount, carrier):
        cdef Walk w
        cdef _Tables t = self._tables
        if type(raw) is not bytes or (query is not None and type(query) is not bytes):
            return self._decide(raw, query, mount, carrier)
        if mount is not None:
            if type(mount) is not bytes:
                return self._decide(raw, query, mount, carrier)
            raw = _unmounted(<bytes>raw, <bytes>mount)
        if self._routed:
            t = _tables_for(self._select(raw))
        if query is None:
            result = _parse(<bytes>raw, t, &w)
        else:
            result = _parse_split(<bytes>raw, <bytes>query, t, &w)
        if result is None:
            target = raw if not query else b"?".join((raw, query))
            return self._decide_invalid(_new_error(&w.err), target, carrier)
        carrier[self._key] = result
        return None


cdef bytes _unmounted(bytes raw, bytes mount):
    """``unmount(raw, mount)``: what uvicorn sends (the mount point glued in
    front of the raw path, then '/') taken off here, the rest by ``unmount``."""
    cdef Py_ssize_t m = PyBytes_GET_SIZE(mount)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(raw)
    cdef const char* s = PyBytes_AS_STRING(raw)
    if not m:
        return raw
    # m < n: s[m] is inside raw; a mount point ending in '/' is unmount's to trim.
    if (
        m < n and s[m] == 0x2F and PyBytes_AS_STRING(mount)[m - 1] != 0x2F
        and memcmp(s, PyBytes_AS_STRING(mount), m) == 0
    ):
        return PyBytes_FromStringAndSize(s + m, n - m)
    return unmount(raw, mount)


_check_direct_construction()
_LazyTarget = _make_lazy_target_type()
