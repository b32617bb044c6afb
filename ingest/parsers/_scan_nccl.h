/* NCCL_DEBUG=INFO lines read in C (included by _scan.c; native.py binds it with nccl_bind()).
 *
 *     vm:1467:1467 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
 *     vm:1467:1467 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM
 *     vm:1467:1467 [0] NCCL INFO Channel 00/24 : 0 1
 *     vm:1467:1467 [0] NCCL INFO ncclCommInitRankConfig comm 0x1518ba20 rank 0 nranks 2 cudaDev 0 ...
 *
 * A start-up prints a few hundred such lines a rank, and nearly all of them change nothing in
 * the readers once the first of their kind was read: an INFO message nccl_debug has no branch
 * for, a ring listing once the ring channels are set, a version line once the settings it gives
 * are held. Such a line is read here: what Tagger._tag and nccl_debug.Parser.feed would do with
 * it is only to remember its text (Tagger.nccl_lines, Parser.channel_lines, while they hold
 * fewer than REPEATS), and that is done here too (a version line is also marked used and
 * offered to the context watcher, as _version and the engine do).
 *
 * Every thread, though, starts with lines that set something: its first `rank R nranks N` line
 * (the thread's, process's and device's ranks, the process's rank in the Tagger, a larger count)
 * and its first connection (the thread's and process's peer rank, a transport new to the
 * parser). A log of many communicators has a new thread every few lines, so these are made here
 * as _tag, _rank and _channel make them: setdefault on the same dicts with the same keys and
 * values, attributes set as Python sets them, in line order. So are an echo's record
 * (`NCCL_X set by environment to V`, `NCCL_X set to V`: nccl_echo), the host of a process an env
 * dump made (nccl_set_host) and a Func/Proto/Algo header whose next line is an NCCL INFO line
 * (no table row: the table closes at once, only its columns are cleared). Every other line, and
 * every line whose effect this cannot prove equal, goes back to Python untouched.
 *
 * Only a line that starts with `host:pid:tid [dev] NCCL INFO ` is taken (a Ray or vLLM prefix,
 * a `file.cc:line` field, WARN/TRACE: Python's). The state read from the readers (their dicts,
 * the process table) is looked at once a scan call and a line head (what Python may change
 * between two calls is read afresh); within one call only this code runs, and where it changes
 * that state it changes what it read too (a head's flags) or reads it again before acting (a
 * process's rank and host, the dicts' setdefault).
 */
#include <limits.h>

enum {
    NP_TAG = 1,    /* result.processes["pid N"] exists with that pid and a host: _tag sets nothing */
    NP_RANK = 2,   /* ... and a rank: _tag's rank search sets nothing */
    NP_TR = 4,     /* tid in thread_rank[(host, pid)] */
    NP_PR = 8,     /* (host, pid) in process_rank */
    NP_DR = 16,    /* dev in device_ranks[(host, pid)] */
    NP_TP = 32,    /* tid in thread_peer_rank[(host, pid)], or (host, pid) in process_rank (_channel sets none) */
    NP_PP = 64,    /* (host, pid) in process_peer_rank, or in process_rank */
    NP_HOSTLESS = 128,  /* the process has that pid and no host yet (an env dump made it): _tag sets it */
    NP_NEW = 256,  /* result.processes has no "pid N": _tag makes it (nccl_new_process) */
};

/* Line heads held, by their hash, two to a set (the last found first; a new one takes the other's
 * place): a start-up log of 162 heads (bench's nccl_startup) in 256 slots one to a hash had pairs
 * of them take a slot in turn, 15K heads of a 32 MB log read afresh; in 1024 slots 3.3K; in 512
 * sets of two 0.7K (a head's first sight, and those read again until their process is made).
 * (A power of two; 128 KB.) */
#define NCCL_HEADS 1024
#define NCCL_HEAD_MAX 96
#define NCCL_NAMES 16
#define NCCL_NAME_MAX 64
#define NCCL_MIRROR_SLOTS 16384  /* lines known to be in nccl_lines / channel_lines: at most half full */
#define NCCL_INT_DIGITS 18       /* records.MAX_INT_DIGITS: read_int() warns past it */
#define NCCL_VALUE_FIELDS 8      /* records.NcclValue's fields, its __init__'s arguments */

typedef struct {
    Py_ssize_t len;  /* 0: an empty entry */
    uint64_t hash;
    char text[NCCL_HEAD_MAX];
    unsigned flags;
    PyObject *tag;  /* "pid N", the Tagger's tag of the line */
    int proc;  /* the f->procs entry its process was put in (compared before use), -1 none */
} nccl_head_seen;

/* A process's part of what nccl_head_flags reads, by its `host:pid` (a renumbered log has a new
 * thread every few lines, of a few hundred processes): the flags of the process found set
 * (NP_TAG, NP_RANK, NP_PR, NP_PP: they stay set, Python only adds) and its tag. A new thread of a
 * process held costs no lookup: its own flags (NP_TR, NP_DR, NP_TP) are left unset, read where a
 * line acts on them (nccl_first_rank, nccl_first_connection: setdefault()s that find what is
 * there) -- half a renumbered log's threads print no rank and no connection.
 * Held in a table that grows (f->procs, its places found by f->proc_at, open addressing on the
 * hash): a fixed table of 256 slots, one a hash, had 680 processes of a renumbered log take each
 * other's slots, half of its 226K new threads reading their process afresh. An entry keeps its
 * place in f->procs as the table grows (heads name it by it). */
#define NCCL_PROCS_MAX (1 << 16)  /* processes held at most (10 MB): past it a new one is read each time */
#define NCCL_PROC_FLAGS (NP_TAG | NP_RANK | NP_PR | NP_PP)
typedef struct {
    Py_ssize_t len;
    uint64_t hash;
    char text[NCCL_HEAD_MAX];
    unsigned flags;
    PyObject *name, *t2;  /* held */
    /* its host and pid as nccl_share gave them where an echo or a rank first shared them, and their
     * (host, pid): what nccl_keys and nccl_echo would decode and share again (NULL: not yet) */
    PyObject *host, *pid, *keys;
} nccl_proc_seen;

typedef struct {
    uint64_t hash;
    Py_ssize_t len;
    char *text;
    unsigned in;  /* 1: in nccl_lines, 2: in channel_lines */
    /* f->epoch when nccl_info last read this text and its end found it idle (see nccl_repeat), else 0 */
    unsigned idle;
    /* The slot of the line kept after this one last time, -1 none, with what nccl_repeat reads of
     * it (its text, its length, its idle mark) and the text of the line after it: a start-up log
     * prints its lines in the same order each time (99% of a bench start-up's INFO lines follow the
     * one they followed before), so the next line is compared with that one first. Held here, with
     * the slot nccl_repeat read last, nothing it reads waits on memory: the next line's text was
     * asked for a line ahead, the next slot and the text after it two lines ahead. */
    int next;
    unsigned next_idle;
    Py_ssize_t next_len;
    const char *next_text, *after_text;
} nccl_mirror_slot;

struct nccl_fast {
    PyObject *result, *parser;  /* bound by nccl_bind() */
    PyObject *record, *source;  /* records.NcclValue and nccl_debug.SOURCE: what an echo makes */
    /* where record's __init__ only stores its arguments in its slots (nccl_bind's `slots`): the slots'
     * offsets, a record made as object.__new__ and that __init__ make it (nccl_value); 0: called */
    int record_plain;
    Py_ssize_t record_at[NCCL_VALUE_FIELDS];
    Py_ssize_t tag_repeats, channel_repeats;  /* processes.REPEATS, nccl_debug.REPEATS */
    PyObject *k_pid, *k_host, *k_rank, *format;  /* "pid", "host", "rank", "nccl_debug" */
    PyObject *k_label, *k_first_line, *k_hints, *k_alias;  /* the other keys of a process (Tagger._process) */
    PyObject *k_network, *k_coll, *k_p2p;  /* the settings "Using network" and "N coll channels" set */
    PyObject *k_version, *k_library, *k_cuda;  /* the settings an `NCCL version` line sets */
    PyObject *k_nranks, *k_nnodes;  /* the parser's largest counts, (count, line) */
    PyObject *k_effective, *k_empty;  /* "effective", "" */
    PyObject *k_set, *k_rccl, *k_overwrite;  /* "set", "RCCL", {"overwrite": True}: made at first use */
    /* per scan call: 0 not read yet, 1 read, -1 off for this call */
    int fetched;
    PyObject *nccl, *pending, *offer, *used;  /* result.nccl, the parser's pending echoes, result.offer, .used */
    PyObject *shared;  /* the parser's shared texts (nccl_debug.Parser._shared), up to shared_max */
    Py_ssize_t shared_max;
    PyObject *processes, *thread_rank, *process_rank, *device_ranks, *thread_peer, *process_peer, *transports;
    long long nranks, nnodes;  /* the largest held, -1: none yet */
    int ring_set;
    int has_network, has_channels;  /* result.settings holds nccl.network; nccl.coll_ and p2p_channels */
    int has_version, has_cuda;  /* ... nccl.version and nccl.library; nccl.cuda_version */
    int nheads, last_head;  /* entries filled (0: none to clear); the entry of the line's head */
    int last_proc;  /* the f->procs entry of the line's process (nccl_head_flags), -1 none */
    PyObject *heads_of[7];  /* the dicts the heads were read from: another of them, and all are read again */
    nccl_head_seen heads[NCCL_HEADS];
    nccl_proc_seen *procs;  /* nprocs of cap_procs held (malloc'd; NULL: none yet) */
    int nprocs, cap_procs;
    int *proc_at;  /* nproc_at places (a power of two, at least twice nprocs): an index into procs, -1 empty */
    int nproc_at;
    int nnames;
    struct { Py_ssize_t len; char text[NCCL_NAME_MAX]; } names[NCCL_NAMES];
    /* the line after the one read (set by the scan loops): in a list, or in a text up to text_end */
    PyObject *next_list;  /* borrowed, for the call */
    Py_ssize_t next_index;
    const char *next_at, *text_end;  /* NULL: no next line known (the chunk's last, or one clean() changes) */
    /* across calls, for the one pair of collections it was filled for (they only ever grow) */
    PyObject *of_lines, *of_channels;
    nccl_mirror_slot *mirror;
    Py_ssize_t mirrored;
    int mirror_last, mirror_before;  /* the slots of the lines last kept or found idle, -1 none */
    /* Bumped when the heads are cleared (the readers' dicts are others): a slot's idle mark, made
     * of what the dicts held, holds for this epoch only. Never 0. */
    unsigned epoch;
    context_fast *ctx;  /* the scanner's Watcher binding (_scan_context.h, env_bind()) */
    struct env_fast *env;  /* env dumps, launch commands and other NCCL-named lines (_scan_env.h) */
};

static void env_free(struct nccl_fast *f);  /* _scan_env.h */

static void nccl_heads_clear(struct nccl_fast *f) {
    for (int i = 0; i < 7; i++) Py_CLEAR(f->heads_of[i]);
    if (f->nheads)
        for (int i = 0; i < NCCL_HEADS; i++) {
            Py_CLEAR(f->heads[i].tag);
            f->heads[i].len = 0;
        }
    f->nheads = 0, f->last_head = 0;
    f->nnames = 0;
    for (int i = 0; i < f->nprocs; i++) {
        nccl_proc_seen *q = &f->procs[i];
        Py_CLEAR(q->name); Py_CLEAR(q->t2); Py_CLEAR(q->host); Py_CLEAR(q->pid); Py_CLEAR(q->keys);
    }
    free(f->procs), free(f->proc_at);
    f->procs = NULL, f->proc_at = NULL;
    f->nprocs = f->cap_procs = f->nproc_at = 0;
    f->last_proc = -1;
    if (++f->epoch == 0) f->epoch = 1;
}

static void nccl_mirror_clear(struct nccl_fast *f) {
    if (f->mirror) {
        for (Py_ssize_t i = 0; i < NCCL_MIRROR_SLOTS; i++) free(f->mirror[i].text);
        free(f->mirror);
        f->mirror = NULL;
    }
    f->mirrored = 0;
    f->mirror_last = f->mirror_before = -1;
    Py_CLEAR(f->of_lines);
    Py_CLEAR(f->of_channels);
}

static void env_enter(struct nccl_fast *f);  /* _scan_env.h */

static void nccl_fast_free(Scanner *self) {
    struct nccl_fast *f = self->nccl;
    if (!f) return;
    nccl_heads_clear(f);
    nccl_mirror_clear(f);
    context_clear(f->ctx);
    env_free(f);
    PyObject **refs[] = {&f->result, &f->parser, &f->record, &f->source, &f->nccl, &f->pending, &f->offer,
                         &f->used, &f->shared, &f->k_version, &f->k_library, &f->k_cuda, &f->k_nranks, &f->k_nnodes,
                         &f->k_effective, &f->k_empty, &f->k_pid, &f->k_host, &f->k_rank, &f->format,
                         &f->k_set, &f->k_rccl, &f->k_overwrite, &f->k_label, &f->k_first_line, &f->k_hints, &f->k_alias, &f->k_network,
                         &f->k_coll, &f->k_p2p, &f->processes,
                         &f->thread_rank, &f->process_rank, &f->device_ranks, &f->thread_peer, &f->process_peer,
                         &f->transports};
    for (size_t i = 0; i < sizeof(refs) / sizeof(*refs); i++) Py_CLEAR(*refs[i]);
    free(f);
    self->nccl = NULL;
}

/* A scan call starts: what Python may have changed since the last one is read again. */
static void nccl_fast_enter(Scanner *self) {
    struct nccl_fast *f = self->nccl;
    self->ctx.fetched = 0;
    if (!f) return;
    f->fetched = 0;
    f->next_list = NULL, f->next_at = NULL;
    env_enter(f);  /* (the heads are kept: nccl_fetch says when they are not) */
}

/* The scan loops say where the line after the one they read is: lines[index] of a list, or the
 * text from `at` (NULL: none known) to its end. */
static inline void nccl_next_line(Scanner *self, PyObject *lines, Py_ssize_t index, const char *at, const char *end) {
    struct nccl_fast *f = self->nccl;
    if (!f) return;
    f->next_list = lines, f->next_index = index, f->next_at = at, f->text_end = end;
}


/* The offsets of `slots` (names) in `record`, a type whose instances object.__new__ makes and whose
 * attributes are set plainly, each name a writable object slot of its own: 1, 0 when any is not so
 * (the record is then called), -1 on an error. */
static int nccl_value_slots(PyObject *record, PyObject *slots, Py_ssize_t *at) {
    if (!PyType_Check(record) || !PyTuple_CheckExact(slots) || PyTuple_GET_SIZE(slots) != NCCL_VALUE_FIELDS)
        return 0;
    PyTypeObject *t = (PyTypeObject *)record;
    if (t->tp_new != PyBaseObject_Type.tp_new || t->tp_alloc != PyType_GenericAlloc
        || t->tp_setattro != PyObject_GenericSetAttr || t->tp_itemsize != 0)
        return 0;
    for (Py_ssize_t i = 0; i < NCCL_VALUE_FIELDS; i++) {
        PyObject *name = PyTuple_GET_ITEM(slots, i);
        if (!PyUnicode_Check(name)) return 0;
        PyObject *d = PyObject_GetAttr(record, name);  /* a member descriptor on its class: itself */
        if (!d) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
            PyErr_Clear();
            return 0;
        }
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) && PyDescr_TYPE(d) == t;
        if (ok) {
            PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
            ok = m->type == T_OBJECT_EX && !(m->flags & READONLY) && m->offset >= (Py_ssize_t)sizeof(PyObject)
                 && m->offset <= t->tp_basicsize - (Py_ssize_t)sizeof(PyObject *);
            for (Py_ssize_t j = 0; ok && j < i; j++) ok = at[j] != m->offset;
            at[i] = m->offset;
        }
        Py_DECREF(d);
        if (!ok) return 0;
    }
    return 1;
}

/* record(*argv) (NCCL_VALUE_FIELDS arguments): a new reference, NULL on an error. Where its __init__
 * only stores them (record_plain), made as object.__new__ and that __init__ make it: no Python
 * frame a value (a start-up log makes hundreds of thousands). Such a record of str, int and None
 * alone (no object the collector tracks) is untracked, as the collector untracks a tuple of them:
 * no cycle runs through it, and the collections its allocations set off (one each 700 objects
 * made) do not walk every record made since (7% of a start-up log's scan). A container set on
 * it later stays alive through it (the collector takes every reference from it for an outside one). */
static PyObject *nccl_value(struct nccl_fast *f, PyObject *const *argv) {
    if (!f->record_plain) return PyObject_Vectorcall(f->record, argv, NCCL_VALUE_FIELDS, NULL);
    PyTypeObject *t = (PyTypeObject *)f->record;
    PyObject *o = t->tp_alloc(t, 0);
    if (!o) return NULL;
    int atomic = 1;
    for (int i = 0; i < NCCL_VALUE_FIELDS; i++) {
        *(PyObject **)((char *)o + f->record_at[i]) = Py_NewRef(argv[i]);
        atomic &= !PyObject_IS_GC(argv[i]);
    }
    if (atomic && PyObject_GC_IsTracked(o)) PyObject_GC_UnTrack(o);
    return o;
}

/* nccl_bind(result, parser, tag_repeats, channel_repeats, record, source[, slots]): read NCCL INFO lines
 * for this result's Tagger and nccl_debug parser (the scanner reads none without it); an echo is made
 * record(key, value, "effective", line, source, "", None, process). `slots`: the names record's __init__
 * stores its arguments in, in order, and does nothing else (native.py reads its code: _plain_init). */
static PyObject *Scanner_nccl_bind(Scanner *self, PyObject *args) {
    PyObject *result, *parser, *record, *source, *slots = Py_None;
    Py_ssize_t tag_repeats, channel_repeats;
    if (!PyArg_ParseTuple(args, "OOnnOU|O", &result, &parser, &tag_repeats, &channel_repeats, &record, &source,
                          &slots))
        return NULL;
    if (!PyCallable_Check(record)) {
        PyErr_SetString(PyExc_TypeError, "record must be callable");
        return NULL;
    }
    if (not_ready(self)) return NULL;
    if (tag_repeats < 0 || channel_repeats < 0) {
        PyErr_SetString(PyExc_ValueError, "the repeats held are counts");
        return NULL;
    }
    Py_ssize_t record_at[NCCL_VALUE_FIELDS] = {0};
    int plain = slots == Py_None ? 0 : nccl_value_slots(record, slots, record_at);
    if (plain < 0) return NULL;
    if (slots != Py_None && !plain) {
        PyErr_SetString(PyExc_TypeError, "slots must name the record type's own writable slots");
        return NULL;
    }
    nccl_fast_free(self);
    struct nccl_fast *f = calloc(1, sizeof(*f));
    if (!f) return PyErr_NoMemory();
    self->nccl = f;
    f->ctx = &self->ctx;
    f->mirror_last = f->mirror_before = -1, f->epoch = 1;
    f->record_plain = plain;
    memcpy(f->record_at, record_at, sizeof(record_at));
    f->k_pid = PyUnicode_InternFromString("pid");
    f->k_host = PyUnicode_InternFromString("host");
    f->k_rank = PyUnicode_InternFromString("rank");
    f->k_label = PyUnicode_InternFromString("label");
    f->k_first_line = PyUnicode_InternFromString("first_line");
    f->k_hints = PyUnicode_InternFromString("hints");
    f->k_alias = PyUnicode_InternFromString("alias");
    f->format = PyUnicode_InternFromString("nccl_debug");
    f->k_network = PyUnicode_InternFromString("nccl.network");
    f->k_coll = PyUnicode_InternFromString("nccl.coll_channels");
    f->k_p2p = PyUnicode_InternFromString("nccl.p2p_channels");
    f->k_effective = PyUnicode_InternFromString("effective");
    f->k_empty = PyUnicode_InternFromString("");
    f->k_version = PyUnicode_InternFromString("nccl.version");
    f->k_library = PyUnicode_InternFromString("nccl.library");
    f->k_cuda = PyUnicode_InternFromString("nccl.cuda_version");
    f->k_nranks = PyUnicode_InternFromString("nranks");
    f->k_nnodes = PyUnicode_InternFromString("nnodes");
    if (!f->k_pid || !f->k_host || !f->k_rank || !f->format || !f->k_network || !f->k_coll || !f->k_p2p
        || !f->k_effective || !f->k_empty || !f->k_version || !f->k_library || !f->k_cuda || !f->k_nranks
        || !f->k_nnodes || !f->k_label || !f->k_first_line || !f->k_hints || !f->k_alias) {
        nccl_fast_free(self);
        return NULL;
    }
    Py_INCREF(result);
    Py_INCREF(parser);
    Py_INCREF(record);
    Py_INCREF(source);
    f->result = result, f->parser = parser, f->record = record, f->source = source;
    f->tag_repeats = tag_repeats, f->channel_repeats = channel_repeats;
    Py_RETURN_NONE;
}

/* A dict attribute of `o` (a new reference), NULL with no error set when it is not one. */
static PyObject *nccl_dict_attr(PyObject *o, const char *name) {
    PyObject *d = PyObject_GetAttrString(o, name);
    if (!d) { PyErr_Clear(); return NULL; }
    if (!PyDict_CheckExact(d)) { Py_DECREF(d); return NULL; }
    return d;
}

/* The first of a held (count, line) pair, -1 for None; -2 when it is neither (the line goes back). */
static long long nccl_held(PyObject *parser, const char *name) {
    PyObject *t = PyObject_GetAttrString(parser, name);
    if (!t) { PyErr_Clear(); return -2; }
    long long v = -2;
    if (t == Py_None) v = -1;
    else if (PyTuple_CheckExact(t) && PyTuple_GET_SIZE(t) == 2 && PyLong_CheckExact(PyTuple_GET_ITEM(t, 0))) {
        int overflow;
        v = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(t, 0), &overflow);
        if (overflow > 0) v = LLONG_MAX;  /* more than any count read here: still "not larger" */
        else if (overflow < 0 || v < 0) v = -2;
        if (PyErr_Occurred()) { PyErr_Clear(); v = -2; }
    }
    Py_DECREF(t);
    return v;
}

/* The readers' state for this scan call: 1, or 0 when it cannot be read (the lines go back). */
static int nccl_fetch(struct nccl_fast *f) {
    f->fetched = -1;
    PyObject *formats = PyObject_GetAttrString(f->result, "formats");
    if (!formats) { PyErr_Clear(); return 0; }
    int has = PyList_CheckExact(formats) ? PySequence_Contains(formats, f->format) : 0;
    Py_DECREF(formats);
    if (has <= 0) { PyErr_Clear(); return 0; }  /* add_format() would add it: the first line is Python's */
    PyObject *in_matrix = PyObject_GetAttrString(f->parser, "in_matrix");
    if (!in_matrix) { PyErr_Clear(); return 0; }
    Py_DECREF(in_matrix);
    if (in_matrix != Py_False) return 0;
    Py_XSETREF(f->processes, nccl_dict_attr(f->result, "processes"));
    Py_XSETREF(f->thread_rank, nccl_dict_attr(f->parser, "thread_rank"));
    Py_XSETREF(f->process_rank, nccl_dict_attr(f->parser, "process_rank"));
    Py_XSETREF(f->device_ranks, nccl_dict_attr(f->parser, "device_ranks"));
    Py_XSETREF(f->thread_peer, nccl_dict_attr(f->parser, "thread_peer_rank"));
    Py_XSETREF(f->process_peer, nccl_dict_attr(f->parser, "process_peer_rank"));
    Py_XSETREF(f->transports, nccl_dict_attr(f->parser, "transports"));
    if (!f->processes || !f->thread_rank || !f->process_rank || !f->device_ranks || !f->thread_peer
        || !f->process_peer || !f->transports) return 0;
    /* The heads' flags say what these dicts held. They are kept across scan calls: Python only
     * adds to them (a key once in stays, a process's pid, host and rank once set stay), and a flag
     * not set yet is looked at again before it is acted on (nccl_head_flags, the setdefault()s).
     * Dicts other than the ones they were read from: all are read again. */
    PyObject *of[7] = {f->processes, f->thread_rank, f->process_rank, f->device_ranks, f->thread_peer,
                       f->process_peer, f->transports};
    if (memcmp(of, f->heads_of, sizeof(of)) != 0) {
        nccl_heads_clear(f);
        for (int i = 0; i < 7; i++) {
            Py_INCREF(of[i]);
            f->heads_of[i] = of[i];
        }
    }
    f->nranks = nccl_held(f->parser, "nranks");
    f->nnodes = nccl_held(f->parser, "nnodes");
    if (f->nranks < -1 || f->nnodes < -1) return 0;
    PyObject *ring = PyObject_GetAttrString(f->parser, "ring_channels");
    if (!ring) { PyErr_Clear(); return 0; }
    f->ring_set = ring != Py_None;
    Py_DECREF(ring);
    PyObject *settings = nccl_dict_attr(f->result, "settings");
    if (!settings) return 0;
    int net = PyDict_Contains(settings, f->k_network), coll = PyDict_Contains(settings, f->k_coll),
        p2p = PyDict_Contains(settings, f->k_p2p), ver = PyDict_Contains(settings, f->k_version),
        lib = PyDict_Contains(settings, f->k_library), cuda = PyDict_Contains(settings, f->k_cuda);
    Py_DECREF(settings);
    if (net < 0 || coll < 0 || p2p < 0 || ver < 0 || lib < 0 || cuda < 0) { PyErr_Clear(); return 0; }
    f->has_network = net, f->has_channels = coll && p2p;
    f->has_version = ver && lib, f->has_cuda = cuda;
    Py_XSETREF(f->nccl, PyObject_GetAttrString(f->result, "nccl"));
    Py_XSETREF(f->pending, PyObject_GetAttrString(f->parser, "pending"));
    Py_XSETREF(f->offer, PyObject_GetAttrString(f->result, "offer"));
    Py_XSETREF(f->used, PyObject_GetAttrString(f->result, "used"));
    Py_XSETREF(f->shared, PyObject_GetAttrString(f->parser, "shared"));
    PyObject *most = PyObject_GetAttrString(f->parser, "SHARED");
    f->shared_max = most && PyLong_CheckExact(most) ? PyLong_AsSsize_t(most) : -1;
    Py_XDECREF(most);
    if (!f->nccl || !f->pending || !f->offer || !f->used || !f->shared || !PyList_CheckExact(f->nccl)
        || !PyList_CheckExact(f->pending) || !PyDict_CheckExact(f->shared) || f->shared_max < 0
        || !PySet_CheckExact(f->used)) {
        PyErr_Clear();
        return 0;
    }
    f->fetched = 1;
    return 1;
}

/* `host:pid:tid [dev] NCCL INFO msg` from the line's start, as _LINE and the Tagger's _NCCL
 * match it there (their search's first match is this one when the line starts so). */
typedef struct {
    Py_ssize_t host_end, pid_at, pid_end, tid_at, tid_end, dev_at, dev_end, msg;
} nccl_line_head;

static Py_ssize_t nccl_digits(const char *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && is_digit(s[i])) i++;
    return i;
}

/* A head's pid (at most NCCL_INT_DIGITS digits: nccl_head_start saw to it), read where it is used:
 * a head's own process is known for most lines. */
static long long nccl_head_pid(const char *s, const nccl_line_head *h) {
    long long pid = 0;
    for (Py_ssize_t k = h->pid_at; k < h->pid_end; k++) pid = pid * 10 + (s[k] - '0');
    return pid;
}

/* `host:pid:tid [dev] ` from the line's start into *h: the place after it, 0 when the line is not so
 * (nccl_head_of; a WARN line's, _scan_nccl_other.h). */
static Py_ssize_t nccl_head_start(const char *s, Py_ssize_t n, nccl_line_head *h) {
    Py_ssize_t i = 0;
    while (i < n && s[i] != ':') {
        if (is_space(s[i])) return 0;  /* [^\s:]+ */
        i++;
    }
    if (i == 0 || i == n) return 0;
    h->host_end = i;
    h->pid_at = ++i;
    i = nccl_digits(s, n, i);
    if (i == h->pid_at || i - h->pid_at > NCCL_INT_DIGITS || i >= n || s[i] != ':') return 0;
    h->pid_end = i;
    h->tid_at = ++i;
    i = nccl_digits(s, n, i);
    if (i == h->tid_at || i + 2 > n || s[i] != ' ' || s[i + 1] != '[') return 0;
    h->tid_end = i;
    h->dev_at = i + 2;
    i = nccl_digits(s, n, h->dev_at);
    if (i == h->dev_at || i + 2 > n || s[i] != ']' || s[i + 1] != ' ') return 0;
    h->dev_end = i;
    return i + 2;
}

static int nccl_head_of(const char *s, Py_ssize_t n, nccl_line_head *h) {
    Py_ssize_t i = nccl_head_start(s, n, h);
    /* `(?:\S+:\d+ )?NCCL INFO\b ?`: the optional field cannot match inside "NCCL" (no ':'). */
    if (!i || !starts_len(s + i, n - i, "NCCL INFO ", 10)) return 0;
    h->msg = i + 10;
    return 1;
}

/* Whether the next line starts with an NCCL INFO head (nccl_head_of): 0 when unknown. */
static int nccl_next_is_head(struct nccl_fast *f) {
    const char *s = NULL;
    Py_ssize_t n = 0;
    if (f->next_list) {
        if (f->next_index >= PyList_GET_SIZE(f->next_list)) return 0;
        PyObject *line = PyList_GET_ITEM(f->next_list, f->next_index);
        if (!PyUnicode_CheckExact(line) || !PyUnicode_IS_ASCII(line)) return 0;  /* an MpiLine: its tag first */
        s = (const char *)PyUnicode_1BYTE_DATA(line), n = PyUnicode_GET_LENGTH(line);
    } else if (f->next_at && f->next_at <= f->text_end) {
        const char *nl = memchr(f->next_at, '\n', (size_t)(f->text_end - f->next_at));
        s = f->next_at, n = (nl ? nl : f->text_end) - f->next_at;
        int64_t job, rank;
        Py_ssize_t tag = n && s[0] == '[' ? mpi_tag(s, n, &job, &rank) : 0;  /* (the scanner takes it off) */
        s += tag, n -= tag;
    } else {
        return 0;
    }
    nccl_line_head h;
    return nccl_head_of(s, n, &h);
}

/* Whether nccl_tests does nothing with an NCCL INFO line whose host starts with a digit (a STARTS
 * of its own: `10-4-3-3:97095:97191 [5] NCCL INFO ...`) before its first header (tests_idle's mode
 * 2): _row then reads only a line whose third cell is a type (_DTYPES), and a head's is "NCCL"
 * (one of the scanner's words only if a type were so named). tests_idle leaves such a line of
 * 9 or 13 cells to Python; a thread's first lines often have 13. */
static int nccl_tests_ignores(const Tests *t, const char *s, Py_ssize_t n) {
    if (!t || t->idle_mode != 2) return 0;
    for (int w = 0; w < t->nwords; w++)
        if (t->word_len[w] == 4 && memeq(t->word[w], "NCCL", 4)) return 0;
    nccl_line_head h;
    return nccl_head_of(s, n, &h);
}

/* Whether launch_env, the one other reader a line concerns, does nothing with it: a line whose
 * host is plain ([A-Za-z0-9_.-], up to its ':') that names launch_env by its first letter
 * (STARTS: an upper-case host, `TARS:829507:829550 [0] NCCL ...`) or by "NCCL_" in an echo
 * (`... NCCL INFO NCCL_PROTO set by environment to LL`) with no env dump's "pid=" and no
 * -x/-e/--env flag. Its feed() then reads it as a command: no prompt (`user@host:...$` needs an '@') and no
 * `export`/`NAME=` start (the host runs to a ':') -- nothing. */
static int nccl_launch_idle(const char *s, Py_ssize_t n, unsigned rd, unsigned by_literal) {
    if (rd != (rd & (BIT(R_TAGGER) | BIT(R_SGLANG) | BIT(R_NCCL_DEBUG) | BIT(R_LAUNCH_ENV)))
        || !(rd & BIT(R_NCCL_DEBUG)) || n == 0 || is_digit(s[0]))
        return 0;
    Py_ssize_t i = 0;
    while (i < n && (is_word(s[i]) || s[i] == '.' || s[i] == '-')) i++;
    if (i == 0 || i == n || s[i] != ':') return 0;
    if (!(by_literal & BIT(R_LAUNCH_ENV))) return 1;
    nccl_line_head h;
    /* "environ" (an echo's "environment") makes feed() try _DUMP, `pid=(\d+) environ`: no "pid=", no dump.
     * Any INFO message then, an echo or not (`Dmabuf feature disabled without NCCL_DMABUF_ENABLE=1`). */
    return nccl_head_of(s, n, &h) && !find(s, n, "pid=", 4)
        && !find(s, n, " -x", 3) && !find(s, n, " -e", 3) && !find(s, n, "--env", 5);
}

static uint64_t nccl_hash(const char *s, Py_ssize_t n);

/* A head's thread as nccl_debug.thread_key() keys it: an int where its digits are one's own form
 * (no leading zero, up to NCCL_INT_DIGITS), else its text. A new reference, NULL on an error. */
static PyObject *nccl_tid(const char *s, const nccl_line_head *h) {
    const char *t = s + h->tid_at;
    Py_ssize_t n = h->tid_end - h->tid_at;
    if (n > NCCL_INT_DIGITS || (n > 1 && t[0] == '0')) return PyUnicode_DecodeASCII(t, n, NULL);
    long long v = 0;
    for (Py_ssize_t k = 0; k < n; k++) v = v * 10 + (t[k] - '0');
    return PyLong_FromLongLong(v);
}

/* The place in f->proc_at of the process `host:pid` (s[0:len], its hash): where its index is,
 * else the empty place where it would go; -1 without a table yet. */
static int nccl_proc_place(const struct nccl_fast *f, const char *s, Py_ssize_t len, uint64_t hash) {
    if (!f->proc_at) return -1;
    unsigned mask = (unsigned)f->nproc_at - 1;
    for (unsigned k = (unsigned)(hash >> 32) & mask;; k = (k + 1) & mask) {  /* (at most half full) */
        int i = f->proc_at[k];
        if (i < 0) return (int)k;
        const nccl_proc_seen *q = &f->procs[i];
        if (q->hash == hash && q->len == len && memeq(q->text, s, (size_t)len)) return (int)k;
    }
}

/* A new entry for the process `host:pid` (s[0:len], its hash; not held), its objects NULL: NULL
 * when the table cannot grow (no error set: the process is read afresh each time). */
static nccl_proc_seen *nccl_proc_add(struct nccl_fast *f, const char *s, Py_ssize_t len, uint64_t hash) {
    if (len > NCCL_HEAD_MAX || f->nprocs >= NCCL_PROCS_MAX) return NULL;
    if (f->nprocs == f->cap_procs) {
        int cap = f->cap_procs ? f->cap_procs * 2 : 256;
        nccl_proc_seen *grown = realloc(f->procs, (size_t)cap * sizeof(*grown));
        if (!grown) return NULL;
        f->procs = grown, f->cap_procs = cap;
    }
    if (2 * (f->nprocs + 1) > f->nproc_at) {  /* kept at most half full: the places made again */
        int places = f->nproc_at ? f->nproc_at * 2 : 512;
        int *at = malloc((size_t)places * sizeof(*at));
        if (!at) return NULL;
        free(f->proc_at);
        f->proc_at = at, f->nproc_at = places;
        for (int k = 0; k < places; k++) at[k] = -1;
        for (int i = 0; i < f->nprocs; i++) {
            const nccl_proc_seen *q = &f->procs[i];
            at[nccl_proc_place(f, q->text, q->len, q->hash)] = i;
        }
    }
    int place = nccl_proc_place(f, s, len, hash);
    nccl_proc_seen *q = &f->procs[f->nprocs];
    memset(q, 0, sizeof(*q));
    q->len = len, q->hash = hash;
    memcpy(q->text, s, (size_t)len);
    f->proc_at[place] = f->nprocs++;
    return q;
}

/* The hash of a line head (nccl_head_flags'), its set of f->heads asked of memory now: the line's
 * message is read before its head's flags are, and a renumbered log's heads, each a set of its own
 * in a 136 KB table, were a cache miss a line. */
static uint64_t nccl_head_ahead(const struct nccl_fast *f, const char *s, const nccl_line_head *h) {
    Py_ssize_t len = h->dev_end + 2;
    if (len > NCCL_HEAD_MAX) return 0;  /* (nccl_head_flags does not read such a head) */
    uint64_t hash = nccl_hash(s, len);
    const char *set = (const char *)&f->heads[(hash & (NCCL_HEADS / 2 - 1)) * 2];
    __builtin_prefetch(set);
    __builtin_prefetch(set + 64);
    __builtin_prefetch(set + sizeof(nccl_head_seen));
    return hash;
}

/* What the Tagger and nccl_debug hold for a line head (see NP_*), found once a scan call. The
 * heads are held by their hash, one to a slot: a renumbered log has a new thread every few lines,
 * and a list of them searched in turn cost a compare a head held (12% of a start-up's parse).
 * `hash`: nccl_head_ahead's. */
static int nccl_head_flags(struct nccl_fast *f, const char *s, const nccl_line_head *h, uint64_t hash,
                           unsigned *flags, PyObject **tag) {
    Py_ssize_t len = h->dev_end + 2;
    if (len > NCCL_HEAD_MAX) return PYTHON;
    int at = (int)(hash & (NCCL_HEADS / 2 - 1)) * 2, same = -1;
    nccl_head_seen *e = &f->heads[at];
    for (int way = 0; way < 2; way++) {
        nccl_head_seen *w = e + way;
        if (w->len != len || w->hash != hash || !memeq(w->text, s, (size_t)len)) continue;
        same = way;
        /* held, and its process as _tag leaves it (flags short of that are read again: Python may have
         * made the process since, or set its host) */
        if (!(w->flags & NP_TAG)) break;
        if (way) {  /* the last found first */
            nccl_head_seen t = *e;
            *e = *w, *w = t;
        }
        f->last_head = at, f->last_proc = e->proc;
        *flags = e->flags, *tag = e->tag;
        return OK;
    }
    /* the process's part: held (nccl_proc_seen) where its flags that matter here are all set */
    Py_ssize_t plen = h->pid_end;
    uint64_t phash = nccl_hash(s, plen);
    int place = nccl_proc_place(f, s, plen, phash);
    nccl_proc_seen *q = place >= 0 && f->proc_at[place] >= 0 ? &f->procs[f->proc_at[place]] : NULL;
    unsigned full = NP_TAG | NP_RANK | NP_PR;
    PyObject *host = NULL, *pid = NULL, *t2 = NULL, *name = NULL;
    int status = ERROR;
    unsigned fl = 0;
    if (q && (q->flags & full) == full) {
        fl = q->flags;
        name = Py_NewRef(q->name);
    } else {
        if (q) {  /* its flags read again (Python may have set them since), with its objects */
            name = Py_NewRef(q->name), t2 = Py_NewRef(q->t2);
        } else {
            host = PyUnicode_DecodeASCII(s, h->host_end, NULL);
            pid = PyUnicode_DecodeASCII(s + h->pid_at, h->pid_end - h->pid_at, NULL);
            t2 = host && pid ? PyTuple_Pack(2, host, pid) : NULL;
            name = pid ? PyUnicode_FromFormat("pid %U", pid) : NULL;
            if (!t2 || !name) goto done;
        }
        PyObject *p = PyDict_GetItemWithError(f->processes, name);
        if (!p && PyErr_Occurred()) goto done;
        if (!p) fl |= NP_NEW;
        if (p && PyDict_CheckExact(p)) {
            PyObject *v = PyDict_GetItemWithError(p, f->k_pid);
            PyObject *ho = v ? PyDict_GetItemWithError(p, f->k_host) : NULL;
            PyObject *r = ho ? PyDict_GetItemWithError(p, f->k_rank) : NULL;
            if (PyErr_Occurred()) goto done;
            int named = ho && PyUnicode_CheckExact(ho) && PyUnicode_GET_LENGTH(ho) > 0;
            if (r && PyLong_CheckExact(v) && (named || ho == Py_None)) {
                int overflow;
                long long pid_held = PyLong_AsLongLongAndOverflow(v, &overflow);
                if (PyErr_Occurred()) goto done;
                if (!overflow && pid_held == nccl_head_pid(s, h))
                    fl |= (named ? NP_TAG : NP_HOSTLESS) | (r != Py_None ? NP_RANK : 0);
            }
        }
        /* (host, pid) in the process dicts. No process, no key of it in nccl_debug's dicts (_tag
         * makes it before _debug reads its line); were one there, the flag left unset only makes
         * its setdefault() run again. */
        struct { PyObject *dict; unsigned bit; } has[] = {{f->process_rank, NP_PR}, {f->process_peer, NP_PP}};
        for (size_t k = 0; p && k < sizeof(has) / sizeof(*has); k++) {
            PyObject *held = PyDict_GetItemWithError(has[k].dict, t2);
            if (!held && PyErr_Occurred()) goto done;
            if (held) fl |= has[k].bit;
        }
        if (!p) {
            q = NULL;  /* (none held: a process is never taken out of the table) */
        } else if (!q && (q = nccl_proc_add(f, s, plen, phash))) {  /* held for its next thread */
            q->name = Py_NewRef(name), q->t2 = Py_NewRef(t2);
        }
        if (q) q->flags = fl & NCCL_PROC_FLAGS;
    }
    if (fl & NP_PR) fl |= NP_TP | NP_PP;  /* _channel keeps no peer rank for a process with a rank */
    /* Into the set's first slot: the head's own entry moved there, or the first's head moved to the
     * second slot, whose head, if any, goes (read again when it comes back). */
    if (same == 1 || same < 0) {
        nccl_head_seen t = e[1];
        e[1] = e[0], e[0] = t;
        if (same < 0) {
            Py_CLEAR(e->tag);
            e->len = 0;
        }
    }
    Py_XSETREF(e->tag, name);
    name = NULL;  /* held by the entry */
    f->nheads++;
    e->len = len, e->hash = hash;
    memcpy(e->text, s, (size_t)len);
    e->flags = fl;
    e->proc = q ? (int)(q - f->procs) : -1;
    f->last_head = at, f->last_proc = e->proc;
    *flags = fl, *tag = e->tag;
    status = OK;
done:
    Py_XDECREF(host); Py_XDECREF(pid); Py_XDECREF(t2); Py_XDECREF(name);
    return status;
}

/* _RANK.search(msg) (`\brank (\d+) n[Rr]anks (\d+)(?: nNodes (\d+))?`): 1 with the spans of its
 * groups (*rank_at: the first's start, its end is *rank_at's digits; *nodes_at = -1 without the
 * third), else 0. */
static int nccl_rank_search(const char *m, Py_ssize_t n, Py_ssize_t *rank_at, Py_ssize_t *ranks_at,
                            Py_ssize_t *ranks_end, Py_ssize_t *nodes_at, Py_ssize_t *nodes_end) {
    /* each 'r' in turn by memchr (a byte a time, the 'r's of every message's words were a branch
     * mispredicted each) */
    if (n < 5) return 0;
    for (const char *p = m, *end = m + n - 4; p < end && (p = memchr(p, 'r', (size_t)(end - p))); p++) {
        Py_ssize_t i = p - m;
        if (!memeq(p, "rank ", 5) || (i > 0 && is_word(m[i - 1]))) continue;
        Py_ssize_t j = nccl_digits(m, n, i + 5);
        if (j == i + 5 || j + 8 > n || m[j] != ' ' || m[j + 1] != 'n' || (m[j + 2] != 'R' && m[j + 2] != 'r')
            || !memeq(m + j + 3, "anks ", 5)) continue;
        Py_ssize_t a = j + 8, b = nccl_digits(m, n, a);
        if (b == a) continue;
        *rank_at = i + 5, *ranks_at = a, *ranks_end = b, *nodes_at = -1, *nodes_end = -1;
        if (b + 8 <= n && memeq(m + b, " nNodes ", 8)) {
            Py_ssize_t c = nccl_digits(m, n, b + 8);
            if (c > b + 8) *nodes_at = b + 8, *nodes_end = c;
        }
        return 1;
    }
    return 0;
}

/* The count a group holds when read_int() reads it without a warning, else -1. */
static long long nccl_count(const char *s, Py_ssize_t at, Py_ssize_t end) {
    if (end - at > NCCL_INT_DIGITS) return -1;
    long long v = 0;
    for (Py_ssize_t k = at; k < end; k++) v = v * 10 + (s[k] - '0');
    return v;
}

/* `[0-9a-fx]+\]` from i: its end after the ']', or -1. */
static Py_ssize_t nccl_hexdev(const char *s, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t at = i;
    while (i < n && (is_digit(s[i]) || (s[i] >= 'a' && s[i] <= 'f') || s[i] == 'x')) i++;
    return i > at && i < n && s[i] == ']' ? i + 1 : -1;
}

/* _CONNECTION.match(msg): the end of its match, or -1; *local_at..*local_end: the rank _channel
 * takes for the thread (the second with `[receive]`, else the first). */
static Py_ssize_t nccl_connection(const char *m, Py_ssize_t n, Py_ssize_t *local_at, Py_ssize_t *local_end) {
    Py_ssize_t i = nccl_digits(m, n, 8), j, from;  /* after "Channel " */
    if (i == 8) return -1;
    if (i < n && m[i] == '/') {
        j = nccl_digits(m, n, i + 1);
        if (j == i + 1) return -1;
        i = j;
    }
    if (!starts_len(m + i, n - i, " : ", 3)) return -1;
    from = i + 3, j = nccl_digits(m, n, from);
    if (j == from || j >= n || m[j] != '[' || (i = nccl_hexdev(m, n, j + 1)) < 0) return -1;
    *local_at = from, *local_end = j;
    if (!starts_len(m + i, n - i, " -> ", 4)) return -1;
    from = i + 4, j = nccl_digits(m, n, from);
    if (j == from || j >= n || m[j] != '[' || (i = nccl_hexdev(m, n, j + 1)) < 0) return -1;
    if (starts_len(m + i, n - i, " [receive]", 10)) {
        i += 10;
        *local_at = from, *local_end = j;
    }
    return i;
}

/* _RING.match(msg): `^Channel \d+/(\d+) :(?: +\d+)+\s*$`. */
static int nccl_ring(const char *m, Py_ssize_t n) {
    Py_ssize_t i = nccl_digits(m, n, 8);
    if (i == 8 || i >= n || m[i] != '/') return 0;
    Py_ssize_t j = nccl_digits(m, n, i + 1);
    if (j == i + 1 || !starts_len(m + j, n - j, " :", 2)) return 0;
    i = j + 2;
    int groups = 0;
    for (;;) {
        j = i;
        while (j < n && m[j] == ' ') j++;
        if (j == i || j >= n || !is_digit(m[j])) break;
        i = nccl_digits(m, n, j);
        groups++;
    }
    if (!groups) return 0;
    while (i < n && is_space(m[i])) i++;
    return i == n;
}

/* transport(via) into out (its length), 0 for None, -1 when longer than NCCL_NAME_MAX. */
static Py_ssize_t nccl_transport(const char *v, Py_ssize_t n, char *out) {
    Py_ssize_t cut[4], parts = 0;  /* where the first slashes are */
    for (Py_ssize_t i = 0; i < n && parts < 4; i++)
        if (v[i] == '/') cut[parts++] = i;
    if (n > NCCL_NAME_MAX) return -1;
    if (!parts) return 0;
    Py_ssize_t fam = cut[0], second = (parts > 1 ? cut[1] : n) - cut[0] - 1;
    const char *p1 = v + cut[0] + 1;
    if (fam == 3 && memeq(v, "P2P", 3)) {
        if ((second == 3 && memeq(p1, "IPC", 3)) || (second == 5 && memeq(p1, "CUMEM", 5))
            || (second == 14 && memeq(p1, "direct pointer", 14))) {
            memcpy(out, v, (size_t)n);
            return n;
        }
        return 0;
    }
    if (fam == 3 && memeq(v, "SHM", 3)) {
        memcpy(out, v, (size_t)n);
        return n;
    }
    if ((fam == 3 && memeq(v, "NET", 3)) || (fam == 7 && memeq(v, "COLLNET", 7))) {
        if (parts < 2) return 0;
        Py_ssize_t a = cut[1] + 1, b = parts > 2 ? cut[2] : n;
        if (b == a) return 0;  /* "".isdigit() is False */
        for (Py_ssize_t i = a; i < b; i++)
            if (!is_digit(v[i])) return 0;
        /* parts[:2] + parts[3:]: the third part and its slash left out */
        Py_ssize_t k = cut[1];
        memcpy(out, v, (size_t)k);
        if (b < n) {
            memcpy(out + k, v + b, (size_t)(n - b));
            k += n - b;
        }
        return k;
    }
    return 0;
}

/* A connection line's transport: OK with *fresh NULL when nccl_debug holds it already (or the line
 * names none), OK with *fresh the name (a new reference) when _channel would add it, PYTHON for a
 * name too long to read here, ERROR. */
static int nccl_transport_of(struct nccl_fast *f, const char *m, Py_ssize_t n, Py_ssize_t from, PyObject **fresh) {
    *fresh = NULL;
    Py_ssize_t i = from, at = -1, len = 0;
    for (; i + 5 < n; i++) {  /* _VIA.search(msg, c.end()): " via " and one non-space at least */
        if (m[i] != ' ' || !memeq(m + i, " via ", 5) || is_space(m[i + 5])) continue;
        at = i + 5;
        if (starts_len(m + at, n - at, "P2P/direct pointer", 18))
            len = starts_len(m + at + 18, n - at - 18, "/read", 5) ? 23 : 18;
        else
            while (at + len < n && !is_space(m[at + len])) len++;
        break;
    }
    if (at < 0) return OK;  /* no transport named */
    char name[NCCL_NAME_MAX];
    Py_ssize_t k = nccl_transport(m + at, len, name);
    if (k == 0) return OK;
    if (k < 0) return PYTHON;
    for (int j = 0; j < f->nnames; j++)
        if (f->names[j].len == k && memeq(f->names[j].text, name, (size_t)k)) return OK;
    PyObject *u = PyUnicode_DecodeASCII(name, k, NULL);
    if (!u) return ERROR;
    int in = PyDict_Contains(f->transports, u);
    if (in <= 0) {
        if (in == 0) *fresh = u;  /* a transport new to the parser: its first line names it */
        else Py_DECREF(u);
        return in < 0 ? ERROR : OK;
    }
    Py_DECREF(u);
    if (f->nnames < NCCL_NAMES) {
        f->names[f->nnames].len = k;
        memcpy(f->names[f->nnames].text, name, (size_t)k);
        f->nnames++;
    }
    return OK;
}

/* Whether p starts with one of nccl_acted_on's strings. */
static inline int nccl_acted_at(const char *p, Py_ssize_t left) {
    return starts_len(p, left, "set by env", 10)      /* "set by environment" (offer), "set by env to" (plugin) */
        || starts_len(p, left, "CCL version", 11)     /* [NR]CCL version (offer) */
        || starts_len(p, left, "to environment", 14)  /* "Adding NCCL_X=v to environment" (plugin) */
        || starts_len(p, left, "nccl.conf", 9) || starts_len(p, left, "NCCL_CONF_FILE", 14);
}

/* Whether msg holds a string that makes nccl_debug (its elif branches) or the context watcher's
 * offer() act on the line: then Python reads it. (offer's `NCCL_X set to ` holds "NCCL_", a
 * trigger of launch_env: such a line is Python's before it comes here.) */
static int nccl_acted_on(const char *m, Py_ssize_t n) {
    /* The places where one of the strings' first two bytes are ("se", "CC", "to", "nc", "NC"), 16 at a
     * time (SSE2, every x86-64 has it), each string then compared there: a byte a time, the search
     * mispredicted a branch every few bytes. */
    Py_ssize_t i = 0;
    enum { SHORTEST = 9 };  /* "nccl.conf": no string starts in the last 8 bytes */
#ifdef __SSE2__
    const __m128i a0 = _mm_set1_epi8('s'), a1 = _mm_set1_epi8('e'), b0 = _mm_set1_epi8('C'), b1 = _mm_set1_epi8('C'),
                  c0 = _mm_set1_epi8('t'), c1 = _mm_set1_epi8('o'), d0 = _mm_set1_epi8('n'), d1 = _mm_set1_epi8('c'),
                  e0 = _mm_set1_epi8('N');
    /* The places from i on, 16 a step while both loads lie inside m[0:n]; then, where the step
     * would pass the end, once more at n - 17 (the places before i masked off): its 16 places run to
     * n - 2, past the last a string fits at. */
    for (Py_ssize_t at = 0; i + SHORTEST <= n && n >= 17; i = at + 16) {
        int last = i + 17 > n;
        at = last ? n - 17 : i;
        __m128i x = _mm_loadu_si128((const __m128i *)(m + at)), y = _mm_loadu_si128((const __m128i *)(m + at + 1));
        __m128i hit = _mm_or_si128(
            _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(x, a0), _mm_cmpeq_epi8(y, a1)),
                         _mm_and_si128(_mm_cmpeq_epi8(x, b0), _mm_cmpeq_epi8(y, b1))),
            _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(x, c0), _mm_cmpeq_epi8(y, c1)),
                         _mm_and_si128(_mm_or_si128(_mm_cmpeq_epi8(x, d0), _mm_cmpeq_epi8(x, e0)),
                                       _mm_or_si128(_mm_cmpeq_epi8(y, d1), _mm_cmpeq_epi8(y, b0)))));
        unsigned bits = (unsigned)_mm_movemask_epi8(hit) & (0xFFFFu << (i - at));
        for (; bits; bits &= bits - 1) {
            Py_ssize_t k = at + __builtin_ctz(bits);
            if (nccl_acted_at(m + k, n - k)) return 1;
        }
        if (last) return 0;
    }
#endif
    for (; i + SHORTEST <= n; i++)
        if ((m[i] == 's' || m[i] == 'C' || m[i] == 't' || m[i] == 'n' || m[i] == 'N') && nccl_acted_at(m + i, n - i))
            return 1;
    return 0;
}

static uint64_t nccl_hash(const char *s, Py_ssize_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    /* The bytes left: the text's last eight where it has eight (some hashed twice), else a byte at a
     * time. A copy of a length only known here was a `rep movs`, tens of cycles a line head. */
    w = 0;
    if (i < n) {
        if (n >= 8) memcpy(&w, s + n - 8, 8);
        else for (Py_ssize_t k = 0; k < n; k++) w |= (uint64_t)(unsigned char)s[k] << (8 * k);
    }
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* The line just read took mirror slot k: the slots before it learn it comes next (nccl_repeat). */
static inline void nccl_mirror_follow(struct nccl_fast *f, int k) {
    nccl_mirror_slot *e = &f->mirror[k];
    if (f->mirror_last >= 0) {
        nccl_mirror_slot *prev = &f->mirror[f->mirror_last];
        prev->next = k, prev->next_idle = e->idle, prev->next_len = e->len, prev->next_text = e->text;
        prev->after_text = e->next >= 0 ? e->next_text : NULL;
        if (f->mirror_before >= 0) f->mirror[f->mirror_before].after_text = e->text;
    }
    f->mirror_before = f->mirror_last, f->mirror_last = k;
    if (e->next >= 0) __builtin_prefetch(e->next_text);  /* the line after, as nccl_repeat */
}

/* A slot's idle mark set: where it is taken off (never, as yet: whether a line is idle follows from
 * its text), the copies held in the slots before it (next_idle) are made void with every other. */
static inline void nccl_mirror_idle(struct nccl_fast *f, nccl_mirror_slot *e, int idle) {
    if (!idle && e->idle == f->epoch && ++f->epoch == 0) f->epoch = 1;
    e->idle = idle ? f->epoch : 0;
}

/* What the Tagger and nccl_debug do with a line they read and act on no further: keep its text
 * in nccl_lines (with its tag) and, a Channel line, in channel_lines, while each holds fewer
 * than REPEATS. The lines known to be in them are mirrored here: no str made for a line again.
 * `hashed`: nccl_hash of the line where known (nccl_info asked for its slot early: nccl_mirror_ahead).
 * `idle`: nccl_info read the line to its end and a repeat of its text would change nothing either
 * (nccl_repeat): marked so on its slot. */
static int nccl_keep(struct nccl_fast *f, const char *s, Py_ssize_t n, const uint64_t *hashed, PyObject *line,
                     PyObject *tag, PyObject *nccl_lines, PyObject *channel_lines, int channel, int idle) {
    unsigned want = (PyDict_GET_SIZE(nccl_lines) < f->tag_repeats ? 1u : 0u)
        | (channel && PySet_GET_SIZE(channel_lines) < f->channel_repeats ? 2u : 0u);
    if (!want) return OK;
    if (f->of_lines != nccl_lines || f->of_channels != channel_lines) {
        nccl_mirror_clear(f);
        Py_INCREF(nccl_lines);
        Py_INCREF(channel_lines);
        f->of_lines = nccl_lines, f->of_channels = channel_lines;
    }
    if (!f->mirror) {
        f->mirror = calloc(NCCL_MIRROR_SLOTS, sizeof(nccl_mirror_slot));
        for (Py_ssize_t k = 0; f->mirror && k < NCCL_MIRROR_SLOTS; k++) f->mirror[k].next = -1;
    }
    uint64_t h = hashed ? *hashed : nccl_hash(s, n);
    nccl_mirror_slot *slot = NULL;
    if (f->mirror) {
        for (Py_ssize_t k = (Py_ssize_t)(h & (NCCL_MIRROR_SLOTS - 1));; k = (k + 1) & (NCCL_MIRROR_SLOTS - 1)) {
            nccl_mirror_slot *e = &f->mirror[k];
            if (!e->text) {
                if (f->mirrored < NCCL_MIRROR_SLOTS / 2) slot = e;
                break;
            }
            if (e->hash == h && e->len == n && memeq(e->text, s, (size_t)n)) {
                nccl_mirror_idle(f, e, idle);
                nccl_mirror_follow(f, (int)k);
                if ((e->in & want) == want) return OK;
                slot = e;
                break;
            }
        }
    }
    PyObject *text = line;
    if (text) Py_INCREF(text);
    else if (!(text = PyUnicode_DecodeASCII(s, n, NULL))) return ERROR;
    int bad = ((want & 1) && !PyDict_SetDefault(nccl_lines, text, tag))
        || ((want & 2) && PySet_Add(channel_lines, text) < 0);
    Py_DECREF(text);
    if (bad) return ERROR;
    if (slot) {
        if (!slot->text) {
            char *copy = malloc((size_t)n ? (size_t)n : 1);
            if (!copy) return OK;  /* not mirrored: looked up again next time */
            memcpy(copy, s, (size_t)n);
            slot->text = copy, slot->len = n, slot->hash = h, slot->in = 0;
            nccl_mirror_idle(f, slot, idle);
            f->mirrored++;
            nccl_mirror_follow(f, (int)(slot - f->mirror));
        }
        slot->in |= want;
    }
    return OK;
}

/* Whether the line repeats the text that came after the last line kept, last time, where that
 * text was marked idle: nccl_info read it to its end and found nothing a repeat would do -- no
 * echo, version or table (they act each time), no offer() (launch_env's literal), and every change
 * it made (a thread's first rank, a first connection, a transport, a process or its host) made
 * already, in dicts that only grow, so that the same text would find it made: the readers would
 * only find it in nccl_lines and channel_lines, where it is. Then nothing is left to do, and none
 * of nccl_info's reading is (its head, its message's searches, its head's flags, its hash). The
 * prediction is only a shortcut: a mismatch is read as any line. The next slot is fetched from
 * memory now, for the line after. */
static inline int nccl_repeat(struct nccl_fast *f, const char *s, Py_ssize_t n, PyObject *nccl_lines,
                              PyObject *channel_lines) {
    if (f->mirror_last < 0 || f->of_lines != nccl_lines || f->of_channels != channel_lines) return 0;
    const nccl_mirror_slot *prev = &f->mirror[f->mirror_last];
    if (prev->next < 0 || prev->next_idle != f->epoch || prev->next_len != n || !memeq(prev->next_text, s, (size_t)n))
        return 0;
    if (f->fetched == 0 && !nccl_fetch(f)) return 0;
    if (f->fetched < 0) return 0;
    /* (nccl_keep found or put the text in each collection that held fewer than REPEATS: one that
     * lacks it was full then, and is still) */
    f->mirror_before = f->mirror_last, f->mirror_last = prev->next;
    __builtin_prefetch(&f->mirror[prev->next]);
    if (prev->after_text) __builtin_prefetch(prev->after_text);
    return 1;
}

/* `*text` replaced by its equal held in f->shared, or held there while it holds fewer than
 * shared_max (nccl_debug.Parser._shared: the echoes that repeat a text share one copy). -1: error. */
static int nccl_share(struct nccl_fast *f, PyObject **text) {
    PyObject *held = PyDict_GetItemWithError(f->shared, *text);  /* borrowed */
    if (held) {
        Py_INCREF(held);
        Py_SETREF(*text, held);
        return 0;
    }
    if (PyErr_Occurred()) return -1;
    return PyDict_GET_SIZE(f->shared) < f->shared_max ? PyDict_SetItem(f->shared, *text, *text) : 0;
}

/* An echo, `NCCL_X set by environment to V` (_ECHO) or `NCCL_X set to V` (_SET_TO), of a process
 * the Tagger knows: what nccl_debug._effective() does (the record, stamped with its process as
 * Tagger.stamp() would, and its pending entry for the rank finish() gives it), then the line
 * offered to the context watcher (result.offer, called: a candidate line). PYTHON, untouched,
 * for any other shape. */
static int nccl_host_pid(struct nccl_fast *f, const char *s, const nccl_line_head *h, PyObject **host, PyObject **pid,
                         PyObject **t2);

static int nccl_echo(struct nccl_fast *f, const char *s, Py_ssize_t n, const nccl_line_head *h, PyObject *line,
                     PyObject *tag, int64_t lineno) {
    const char *m = s + h->msg;
    Py_ssize_t mn = n - h->msg, k = 5;
    while (k < mn && (is_digit(m[k]) || (m[k] >= 'A' && m[k] <= 'Z') || m[k] == '_')) k++;
    if (k == 5) return PYTHON;
    /* _SET_TO, `NCCL_X set to V` (the value a subsystem settled on): `(\S.*?)\s*$`, no more */
    int set_to = !starts_len(m + k, mn - k, " set by environment to ", 23);
    if (set_to && (!starts_len(m + k, mn - k, " set to ", 8) || k + 8 >= mn || is_space(m[k + 8]))) return PYTHON;
    if (!set_to && k == 14 && memeq(m, "NCCL_CONF_FILE", 14)) return PYTHON;  /* a setting as well */
    Py_ssize_t a = k + (set_to ? 8 : 23), b = mn;
    /* offer(): _SKIP would find a later `NCCL INFO` not followed by an echo's words (Python's call) */
    if (find(m + a, mn - a, "NCCL ", 5)) return PYTHON;
    while (a < b && is_space(m[a])) a++;  /* .strip() */
    while (b > a && is_space(m[b - 1])) b--;
    Py_ssize_t d = a + (a < b && m[a] == '-');  /* _INTEGER, `-?\d+\.`: the period off */
    if (!set_to && b - d >= 2 && m[b - 1] == '.') {
        Py_ssize_t j = d;
        while (j < b - 1 && is_digit(m[j])) j++;
        if (j == b - 1) b--;
    }
    PyObject *key = PyUnicode_DecodeASCII(m, k, NULL);
    PyObject *value = PyUnicode_DecodeASCII(m + a, b - a, NULL);
    PyObject *at = PyLong_FromLongLong((long long)lineno);
    PyObject *host = NULL, *pid = NULL;
    PyObject *tid = nccl_tid(s, h);
    PyObject *rec = NULL, *entry = NULL;
    int status = ERROR;
    if (!key || !value || !at || !tid) goto done;
    /* shared in _effective's order: key, value, host, pid (not the thread: see _effective) */
    if (nccl_share(f, &key) < 0 || nccl_share(f, &value) < 0 || !nccl_host_pid(f, s, h, &host, &pid, NULL))
        goto done;
    PyObject *argv[NCCL_VALUE_FIELDS] = {key, value, f->k_effective, at, f->source, f->k_empty, Py_None, tag};
    rec = nccl_value(f, argv);
    if (!rec || PyList_Append(f->nccl, rec) < 0) goto done;
    entry = PyTuple_Pack(4, rec, host, pid, tid);
    if (entry && !PyObject_GC_IsTracked(rec)) PyObject_GC_UnTrack(entry);  /* (str and an untracked record) */
    if (!entry || PyList_Append(f->pending, entry) < 0) goto done;
    /* offered after the readers, as the engines do (nccl_debug's "NCCL" is on it: a reader wants it) */
    if (context_offer(f->ctx, f->offer, s, n, line, lineno, 1) < 0) goto done;
    status = OK;
done:
    Py_XDECREF(key); Py_XDECREF(value); Py_XDECREF(at); Py_XDECREF(host); Py_XDECREF(pid); Py_XDECREF(tid);
    Py_XDECREF(rec); Py_XDECREF(entry);
    return status;
}

/* The host of a process an env dump made (`[TP1] pid=1468 environ ...`), as _tag sets it from the
 * process's first NCCL line (`p["host"] = p["host"] or host`): OK, PYTHON (a line _tag holds
 * already: it returns its tag unread), ERROR. Python's _tag would set the same if the line still
 * goes back to it. */
static int nccl_set_host(struct nccl_fast *f, const char *s, Py_ssize_t n, const nccl_line_head *h, PyObject *line,
                         PyObject *tag, PyObject *nccl_lines) {
    PyObject *text = line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
    if (!text) return ERROR;
    int known = PyDict_Contains(nccl_lines, text);
    Py_DECREF(text);
    if (known) return known < 0 ? ERROR : PYTHON;
    PyObject *p = PyDict_GetItemWithError(f->processes, tag);
    if (!p) return PyErr_Occurred() ? ERROR : PYTHON;
    if (!PyDict_CheckExact(p)) return PYTHON;
    /* set already by another head of the pid in this call (its flags were read before): kept */
    PyObject *held = PyDict_GetItemWithError(p, f->k_host);
    if (!held) return PyErr_Occurred() ? ERROR : PYTHON;
    if (held != Py_None) return PyUnicode_CheckExact(held) && PyUnicode_GET_LENGTH(held) > 0 ? OK : PYTHON;
    PyObject *host = PyUnicode_DecodeASCII(s, h->host_end, NULL);
    if (!host) return ERROR;
    int bad = PyDict_SetItem(p, f->k_host, host);
    Py_DECREF(host);
    return bad < 0 ? ERROR : OK;
}

/* The process of a line's head that the Tagger has not made yet (NP_NEW): what _tag and _process
 * do with its first NCCL line -- {"pid", "host", "rank", "label", "first_line", "hints", "alias"}
 * in that order, the pid read_int() reads (at most NCCL_INT_DIGITS digits: no warning), the host;
 * its rank is left None here, for nccl_first_rank to set from a `rank R nRanks N` message as _tag
 * does. OK (the head's flags then NP_TAG), PYTHON (a line _tag holds already, or a process made
 * since the flags were read), ERROR. Made before a later step hands the line back, the process is
 * what Python's _tag finds then: `_process()` returns it, and pid and host are set to the same. */
static int nccl_new_process(struct nccl_fast *f, const char *s, Py_ssize_t n, const nccl_line_head *h,
                            PyObject *line, PyObject *tag, PyObject *nccl_lines, int64_t lineno) {
    PyObject *text = line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
    if (!text) return ERROR;
    int known = PyDict_Contains(nccl_lines, text);
    Py_DECREF(text);
    if (known) return known < 0 ? ERROR : PYTHON;
    int held = PyDict_Contains(f->processes, tag);
    if (held) return held < 0 ? ERROR : PYTHON;
    PyObject *host = PyUnicode_DecodeASCII(s, h->host_end, NULL);
    PyObject *pid = host ? PyLong_FromLongLong(nccl_head_pid(s, h)) : NULL;
    PyObject *first = pid ? PyLong_FromLongLong((long long)lineno) : NULL;
    PyObject *hints = first ? PyList_New(0) : NULL;
    PyObject *p = hints ? PyDict_New() : NULL;
    int status = ERROR;
    if (p && PyDict_SetItem(p, f->k_pid, pid) == 0 && PyDict_SetItem(p, f->k_host, host) == 0
        && PyDict_SetItem(p, f->k_rank, Py_None) == 0 && PyDict_SetItem(p, f->k_label, Py_None) == 0
        && PyDict_SetItem(p, f->k_first_line, first) == 0 && PyDict_SetItem(p, f->k_hints, hints) == 0
        && PyDict_SetItem(p, f->k_alias, Py_None) == 0 && PyDict_SetItem(f->processes, tag, p) == 0)
        status = OK;
    /* the other heads of the pid held this call (its other threads) said NP_NEW: read again */
    for (int i = 0; status == OK && i < NCCL_HEADS; i++) {
        nccl_head_seen *e = &f->heads[i];
        if (i != f->last_head && e->len && e->tag
            && (e->tag == tag || (PyUnicode_GET_LENGTH(e->tag) == PyUnicode_GET_LENGTH(tag)
                                  && PyUnicode_Compare(e->tag, tag) == 0))) {
            Py_CLEAR(e->tag);
            e->len = 0;
        }
    }
    Py_XDECREF(host); Py_XDECREF(pid); Py_XDECREF(first); Py_XDECREF(hints); Py_XDECREF(p);
    return status;
}

/* (host, pid, tid), (host, pid) and dev of a line head, as nccl_debug keys its dicts: 0 on error. */
static int nccl_share(struct nccl_fast *f, PyObject **text);

/* The line's host and pid shared (nccl_share), as _effective, _rank and _channel share them, and
 * their (host, pid) (NULL where not asked): new references, 0 on an error. Held for the line's
 * process (nccl_proc_seen) once shared: a shared text stays shared (`shared` only grows), and one
 * that did not fit stays out (it is full), so sharing them again would give the same. */
static int nccl_host_pid(struct nccl_fast *f, const char *s, const nccl_line_head *h, PyObject **host, PyObject **pid,
                         PyObject **t2) {
    nccl_proc_seen *q = f->last_proc >= 0 && f->last_proc < f->nprocs ? &f->procs[f->last_proc] : NULL;
    if (q && !(q->len == h->pid_end && memeq(q->text, s, (size_t)q->len))) q = NULL;  /* another's since */
    if (q && q->keys) {
        *host = Py_NewRef(q->host), *pid = Py_NewRef(q->pid);
        if (t2) *t2 = Py_NewRef(q->keys);
        return 1;
    }
    *host = PyUnicode_DecodeASCII(s, h->host_end, NULL);
    *pid = PyUnicode_DecodeASCII(s + h->pid_at, h->pid_end - h->pid_at, NULL);
    PyObject *keys = NULL;
    if (*host && *pid && nccl_share(f, host) == 0 && nccl_share(f, pid) == 0)
        keys = PyTuple_Pack(2, *host, *pid);
    if (!keys) {
        Py_CLEAR(*host); Py_CLEAR(*pid);
        return 0;
    }
    if (q) q->host = Py_NewRef(*host), q->pid = Py_NewRef(*pid), q->keys = Py_NewRef(keys);
    if (t2) *t2 = keys;
    else Py_DECREF(keys);
    return 1;
}

/* (host, pid) shared (nccl_host_pid), tid and dev of a line head, as _rank and _channel key what
 * they keep: 0 on an error. */
static int nccl_keys(struct nccl_fast *f, const char *s, const nccl_line_head *h, PyObject **tid, PyObject **t2,
                     PyObject **dev) {
    PyObject *host, *pid;
    *t2 = NULL;
    int ok = nccl_host_pid(f, s, h, &host, &pid, t2);
    if (ok) Py_DECREF(host), Py_DECREF(pid);
    *tid = nccl_tid(s, h);
    *dev = PyUnicode_DecodeASCII(s + h->dev_at, h->dev_end - h->dev_at, NULL);
    if (*dev && *tid && *t2) return 1;
    Py_CLEAR(*dev); Py_CLEAR(*tid); Py_CLEAR(*t2);
    return 0;
}

/* by_process[t2], a dict of the process's threads (nccl_debug's thread_rank, thread_peer_rank;
 * borrowed), made where absent: NULL with an error set, or with none where it is no dict. */
static PyObject *nccl_threads(PyObject *by_process, PyObject *t2) {
    PyObject *threads = PyDict_GetItemWithError(by_process, t2);
    if (!threads) {
        if (PyErr_Occurred()) return NULL;
        PyObject *fresh = PyDict_New();
        if (!fresh) return NULL;
        threads = PyDict_SetDefault(by_process, t2, fresh);
        Py_DECREF(fresh);
    }
    return threads && PyDict_CheckExact(threads) ? threads : NULL;
}

/* parser.<name> = (count, lineno), as _rank keeps its largest count. */
static int nccl_set_held(struct nccl_fast *f, PyObject *name, long long count, int64_t lineno) {
    PyObject *t = Py_BuildValue("(LL)", count, (long long)lineno);
    if (!t) return ERROR;
    int bad = PyObject_SetAttr(f->parser, name, t);
    Py_DECREF(t);
    return bad < 0 ? ERROR : OK;
}

/* The first `rank R nRanks N` line of a thread (or a larger count): what _tag and _rank do with
 * it -- the process's rank when it has none, the thread's, process's and device's ranks where
 * unset, the largest counts -- once every check is passed (PYTHON before any change). */
static int nccl_first_rank(struct nccl_fast *f, const char *s, Py_ssize_t n, const nccl_line_head *h, PyObject *line,
                           PyObject *tag, PyObject *nccl_lines, int64_t lineno, const char *m, Py_ssize_t rk,
                           Py_ssize_t rke, long long nranks, long long nodes) {
    PyObject *p = PyDict_GetItemWithError(f->processes, tag), *tid = NULL, *t2 = NULL, *dev = NULL, *rank = NULL;
    if (!p) return PyErr_Occurred() ? ERROR : PYTHON;
    if (!PyDict_CheckExact(p)) return PYTHON;
    Py_INCREF(p);  /* held across the calls below, which may run Python code (a str's hash does not) */
    int status = ERROR;
    PyObject *held = PyDict_GetItemWithError(p, f->k_rank);
    if (!held) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
    int set_rank = held == Py_None;
    if (set_rank) {
        /* _tag returns a line it holds already before reading it: no rank set from it then */
        PyObject *text = line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
        if (!text) goto done;
        int known = PyDict_Contains(nccl_lines, text);
        Py_DECREF(text);
        if (known) { status = known < 0 ? ERROR : PYTHON; goto done; }
    }
    if (!nccl_keys(f, s, h, &tid, &t2, &dev)) goto done;
    PyObject *devs = PyDict_GetItemWithError(f->device_ranks, t2);
    if (!devs && PyErr_Occurred()) goto done;
    if (devs && !PyDict_CheckExact(devs)) { status = PYTHON; goto done; }
    PyObject *threads = PyDict_GetItemWithError(f->thread_rank, t2);
    if (!threads && PyErr_Occurred()) goto done;
    if (threads && !PyDict_CheckExact(threads)) { status = PYTHON; goto done; }
    if (!(rank = PyUnicode_DecodeASCII(m + rk, rke - rk, NULL)) || nccl_share(f, &rank) < 0) goto done;
    /* the checks are passed: from here on the line is read here */
    if (set_rank && PyDict_SetItem(p, f->k_rank, rank) < 0) goto done;
    if (!(threads = nccl_threads(f->thread_rank, t2)) || !PyDict_SetDefault(threads, tid, rank)
        || !PyDict_SetDefault(f->process_rank, t2, rank)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "thread_rank holds a process's threads in a dict");
        goto done;
    }
    if (!devs) {
        PyObject *fresh = PyDict_New();
        if (!fresh) goto done;
        devs = PyDict_SetDefault(f->device_ranks, t2, fresh);
        Py_DECREF(fresh);
        if (!devs) goto done;
    }
    if (!PyDict_SetDefault(devs, dev, rank)) goto done;
    if (f->nranks < 0 || nranks > f->nranks) {
        if (nccl_set_held(f, f->k_nranks, nranks, lineno) != OK) goto done;
        f->nranks = nranks;
    }
    if (nodes >= 0 && (f->nnodes < 0 || nodes > f->nnodes)) {
        if (nccl_set_held(f, f->k_nnodes, nodes, lineno) != OK) goto done;
        f->nnodes = nodes;
    }
    status = OK;
done:
    Py_DECREF(p);
    Py_XDECREF(tid); Py_XDECREF(t2); Py_XDECREF(dev); Py_XDECREF(rank);
    return status;
}
/* A thread's first connection (or a transport's first): what _channel does with it -- the thread's
 * and process's peer rank where unset (setdefault), a new transport with its line. */
static int nccl_first_connection(struct nccl_fast *f, const char *s, const nccl_line_head *h, int64_t lineno,
                                 const char *m, Py_ssize_t la, Py_ssize_t le, unsigned fl, PyObject *transport) {
    PyObject *tid = NULL, *t2 = NULL, *dev = NULL, *local = NULL, *at = NULL, *threads;
    int status = ERROR;
    if ((fl & (NP_TP | NP_PP)) != (NP_TP | NP_PP)) {
        if (!nccl_keys(f, s, h, &tid, &t2, &dev)) goto done;
        int ranked = PyDict_Contains(f->process_rank, t2);  /* _channel keeps no peer rank then */
        if (ranked < 0) goto done;
        if (!ranked) {
            if (!(local = PyUnicode_DecodeASCII(m + la, le - la, NULL)) || nccl_share(f, &local) < 0) goto done;
            if (!(threads = nccl_threads(f->thread_peer, t2)) || !PyDict_SetDefault(threads, tid, local)
                || !PyDict_SetDefault(f->process_peer, t2, local)) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "thread_peer_rank holds a process's threads in a dict");
                goto done;
            }
        }
        f->heads[f->last_head].flags |= NP_TP | NP_PP;
    }
    if (transport) {
        if (!(at = PyLong_FromLongLong((long long)lineno)) || PyDict_SetItem(f->transports, transport, at) < 0) goto done;
    }
    status = OK;
done:
    Py_XDECREF(tid); Py_XDECREF(t2); Py_XDECREF(dev); Py_XDECREF(local); Py_XDECREF(at);
    return status;
}

/* `NCCL version X.Y.Z...` (_version, not bare) once the settings it sets are held: 1 when the
 * line is read so (the line marked used, offered to the context watcher), 0 when it is Python's. */
static int nccl_version_held(struct nccl_fast *f, const char *m, Py_ssize_t n) {
    /* _VERSION.search: from the start, `NCCL version \d+\.\d+\.\d+` and then always a match
     * (`\S*?` runs to a space or the end); found later in the message only when not here. */
    Py_ssize_t i = 12, j;
    if (!f->has_version || i >= n || m[i] != ' ') return 0;
    for (int part = 0; part < 3; part++) {
        j = nccl_digits(m, n, i + 1);
        if (j == i + 1 || (part < 2 && (j >= n || m[j] != '.'))) return 0;
        i = j;
    }
    /* group 2 (`\+cuda(\d+\.\d+)`) sets nccl.cuda_version: held, or no "+cuda" to find */
    return f->has_cuda || !find(m, n, "+cuda", 5);
}

/* _version of a line whose settings are held: the line marked used; offer() reads its words. -1 on error. */
static int nccl_version_read(struct nccl_fast *f, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno) {
    /* _version: the line marked used (the settings are held); offer() reads its words (_scan_context.h) */
    PyObject *at = PyLong_FromLongLong((long long)lineno);
    int bad = !at || PySet_Add(f->used, at) < 0;
    Py_XDECREF(at);
    return bad || context_offer(f->ctx, f->offer, s, n, line, lineno, 1) < 0 ? -1 : 0;
}

/* _RCCL_VERSION matched where `t` starts (`RCCL version\s*:?\s*(\d+\.\d+\.\d+)`), its \b before
 * known: 1, else 0 (a search would look further on: Python's). */
static int nccl_rccl_shape(const char *t, Py_ssize_t n) {
    if (!starts_len(t, n, "RCCL version", 12)) return 0;
    Py_ssize_t i = 12, j;
    while (i < n && is_space(t[i])) i++;
    if (i < n && t[i] == ':') i++;
    while (i < n && is_space(t[i])) i++;
    for (int part = 0; part < 3; part++) {
        j = nccl_digits(t, n, i);
        if (j == i || (part < 2 && (j >= n || t[j] != '.'))) return 0;
        i = j + 1;
    }
    return 1;
}

/* _rccl_version of a line whose version is held (nccl.version and nccl.library set): the line
 * marked used, nccl.library set to "RCCL" with this line (overwrite: each such line sets it again,
 * through result.set itself), the line offered. OK, PYTHON (another shape, or no version held), ERROR. */
static int nccl_rccl_version(struct nccl_fast *f, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno,
                             const char *t, Py_ssize_t tn) {
    if (!f->has_version || !nccl_rccl_shape(t, tn)) return PYTHON;
    if (!f->k_set) {
        f->k_set = PyUnicode_InternFromString("set");
        f->k_rccl = PyUnicode_InternFromString("RCCL");
        f->k_overwrite = f->k_set && f->k_rccl ? Py_BuildValue("{s:O}", "overwrite", Py_True) : NULL;
        if (!f->k_overwrite) return ERROR;
    }
    PyObject *at = PyLong_FromLongLong((long long)lineno), *set = NULL, *args = NULL, *r = NULL;
    int status = ERROR;
    if (!at || PySet_Add(f->used, at) < 0) goto done;
    if (!(set = PyObject_GetAttr(f->result, f->k_set))) goto done;
    if (!(args = PyTuple_Pack(4, f->k_library, f->k_rccl, at, f->format))) goto done;
    if (!(r = PyObject_Call(set, args, f->k_overwrite))) goto done;
    status = context_offer(f->ctx, f->offer, s, n, line, lineno, 1) < 0 ? ERROR : OK;
done:
    Py_XDECREF(at); Py_XDECREF(set); Py_XDECREF(args); Py_XDECREF(r);
    return status;
}

/* The mirror slot a line's text hashes to, asked of memory now (and, once it is there, the text it
 * holds: nccl_mirror_text) so that nccl_keep, after the line is read, finds both in the cache: two
 * misses a line of a start-up log (the mirror is a half-megabyte table, each text its own block)
 * were most of what keeping its lines cost. The slot, NULL without a mirror yet. */
static inline const nccl_mirror_slot *nccl_mirror_ahead(const struct nccl_fast *f, uint64_t h) {
    if (!f->mirror) return NULL;
    const nccl_mirror_slot *slot = &f->mirror[h & (NCCL_MIRROR_SLOTS - 1)];
    __builtin_prefetch(slot);
    return slot;
}

static inline void nccl_mirror_text(const nccl_mirror_slot *slot, uint64_t h) {
    if (slot && slot->hash == h && slot->text) __builtin_prefetch(slot->text);
}

/* Whether the line holds none of the Tagger's literals but "NCCL" (its TRIGGERS: "environ" and
 * "server_args=ServerArgs(" are what make _tag read an env dump's process or note a launch line,
 * even on a line no NCCL head is found in). */
static int tagger_nccl_only(const Scanner *self, uint64_t lits) {
    for (int k = 0; k < self->nlit; k++)
        if (lits >> k & 1 && self->lit_reader[k] == R_TAGGER && !(self->lit_len[k] == 4 && memeq(self->lit[k], "NCCL", 4)))
            return 0;
    return 1;
}

/* An MPI-tagged line (`[1,0]<stdout>:...`, s[0:n] after the tag) that the Tagger's "NCCL" names and
 * that mpi_line may read on as it reads a line tagged "main" (its Tagger literals are "NCCL" only,
 * no other reader's literal: no launch_env `NCCL_`, so no echo): the bare `NCCL version` (no
 * " NCCL ": _tag finds no head and tags it "main", no nccl_lines key lacks " NCCL ") or an INFO
 * head's line (_tag tags it `pid N`, which nccl_info reads as any). 1 for either, else 0. */
static int nccl_mpi_shape(const Scanner *self, const char *s, Py_ssize_t n, uint64_t lits, unsigned by_literal) {
    if (by_literal & ~(BIT(R_TAGGER) | BIT(R_NCCL_DEBUG)) || !tagger_nccl_only(self, lits)) return 0;
    if (starts_len(s, n, "NCCL version ", 13)) return find(s, n, " NCCL ", 6) == NULL;
    nccl_line_head h;
    return nccl_head_of(s, n, &h) && !starts_len(s + h.msg, n - h.msg, "NCCL_", 5);
}

/* Whether Tagger._mpi changes nothing for an INFO head's line of rank process `name` (mpi_process's,
 * its rank and label set): the head's process `pid N` (what _tag returns) exists with an alias, and
 * the rank's process has a pid, a host and every hint of it. The line's tag is then the rank's (or
 * `pid N`, a test's device process: _mpi returns it before looking) and no record is made of the
 * line here (no echo: nccl_mpi_shape), so nothing stamps it. OK, PYTHON, ERROR. */
static int nccl_mpi_idle(Scanner *self, const char *s, Py_ssize_t n, PyObject *name) {
    struct nccl_fast *f = self->nccl;
    nccl_line_head h;
    if (!f || f->fetched < 0 || !nccl_head_of(s, n, &h)) return PYTHON;
    if (f->fetched == 0 && !nccl_fetch(f)) return PYTHON;
    PyObject *pid = PyUnicode_DecodeASCII(s + h.pid_at, h.pid_end - h.pid_at, NULL);
    PyObject *tag = pid ? PyUnicode_FromFormat("pid %U", pid) : NULL;
    Py_XDECREF(pid);
    if (!tag) return ERROR;
    PyObject *q = PyDict_GetItemWithError(f->processes, tag);  /* borrowed, as the lookups below */
    Py_DECREF(tag);
    PyObject *p = q ? PyDict_GetItemWithError(f->processes, name) : NULL;
    if (!p) return PyErr_Occurred() ? ERROR : PYTHON;
    if (!PyDict_CheckExact(q) || !PyDict_CheckExact(p)) return PYTHON;
    PyObject *alias = PyDict_GetItemWithError(q, f->k_alias), *q_hints = alias ? PyDict_GetItemWithError(q, f->k_hints) : NULL;
    PyObject *p_pid = q_hints ? PyDict_GetItemWithError(p, f->k_pid) : NULL;
    PyObject *host = p_pid ? PyDict_GetItemWithError(p, f->k_host) : NULL;
    PyObject *p_hints = host ? PyDict_GetItemWithError(p, f->k_hints) : NULL;
    if (!p_hints) return PyErr_Occurred() ? ERROR : PYTHON;
    /* `p["pid"] = p["pid"] or q["pid"]`: an int other than 0 stays; `p["host"] is None`: set from the line */
    if (alias == Py_None || !PyLong_CheckExact(p_pid) || PyObject_IsTrue(p_pid) != 1 || host == Py_None
        || !PyList_CheckExact(q_hints) || !PyList_CheckExact(p_hints))
        return PYTHON;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(q_hints); i++) {  /* _hint(p, hint) of each: held already */
        PyObject *hint = PyList_GET_ITEM(q_hints, i);
        int held = 0;
        if (!PyUnicode_CheckExact(hint)) return PYTHON;
        for (Py_ssize_t j = 0; !held && j < PyList_GET_SIZE(p_hints); j++) {
            PyObject *o = PyList_GET_ITEM(p_hints, j);
            held = o == hint || (PyUnicode_CheckExact(o) && PyUnicode_Compare(o, hint) == 0);
        }
        if (!held) return PYTHON;
    }
    return OK;
}

/* An NCCL INFO line of a process the readers know, read here when what it changes is one of the
 * moves this file makes as they would (see the top): OK, PYTHON (untouched), or ERROR. `head`: the
 * line's head as nccl_head_start read it, `head_end` its end (not 0). */
static int nccl_info(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, unsigned by_literal,
                     PyObject *nccl_lines, PyObject *channel_lines, const nccl_line_head *head, Py_ssize_t head_end) {
    struct nccl_fast *f = self->nccl;
    if (!f || f->fetched < 0) return PYTHON;
    if (nccl_repeat(f, s, n, nccl_lines, channel_lines)) return OK;
    /* nccl_head_of's NCCL INFO after the head */
    if (!starts_len(s + head_end, n - head_end, "NCCL INFO ", 10)) return PYTHON;
    nccl_line_head h = *head;
    h.msg = head_end + 10;
    uint64_t head_hash = nccl_head_ahead(f, s, &h);
    const char *m = s + h.msg;
    Py_ssize_t mn = n - h.msg;
    /* (once both sets are full, nccl_keep does nothing: no hash) */
    int keeps = PyDict_GET_SIZE(nccl_lines) < f->tag_repeats || PySet_GET_SIZE(channel_lines) < f->channel_repeats;
    uint64_t hash = keeps ? nccl_hash(s, n) : 0;
    const nccl_mirror_slot *ahead = keeps ? nccl_mirror_ahead(f, hash) : NULL;
    int echo = starts_len(m, mn, "NCCL_", 5);
    Py_ssize_t rk = 0, ra = 0, re = 0, na = -1, ne = -1;
    int rank = nccl_rank_search(m, mn, &rk, &ra, &re, &na, &ne);
    /* _debug takes the version branch before any later one: its words after it are not read */
    int version = !echo && !rank && starts_len(m, mn, "NCCL version", 12);
    if (version && by_literal & BIT(R_LAUNCH_ENV)) return PYTHON;
    /* _debug's next branch, `RCCL version` (no rank, no Channel): the library set again */
    int rccl = !echo && !rank && !version && starts_len(m, mn, "RCCL version", 12);
    /* a branch's words: Python's. "NCCL_" elsewhere is no branch's: launch_env does nothing with the
     * line (read_line asked nccl_launch_idle), and offer() is called below (`NCCL_X set to `). */
    if (!echo && !version && !rccl && nccl_acted_on(m, mn)) return PYTHON;
    nccl_mirror_text(ahead, hash);
    if (echo) {  /* _debug's first branch; _tag sets a missing rank its message names */
        unsigned fl;
        PyObject *tag;
        if (f->fetched == 0 && !nccl_fetch(f)) return PYTHON;
        int status = nccl_head_flags(f, s, &h, head_hash, &fl, &tag);
        if (status != OK) return status;
        if (fl & NP_HOSTLESS) {
            if ((status = nccl_set_host(f, s, n, &h, line, tag, nccl_lines)) != OK) return status;
            fl = f->heads[f->last_head].flags = (fl & ~NP_HOSTLESS) | NP_TAG;
        }
        if (fl & NP_NEW && !rank) {  /* (a rank the message names is _tag's to set: Python's) */
            if ((status = nccl_new_process(f, s, n, &h, line, tag, nccl_lines, lineno)) != OK) return status;
            fl = f->heads[f->last_head].flags = (fl & ~NP_NEW) | NP_TAG;
        }
        if (!(fl & NP_TAG) || (rank && !(fl & NP_RANK))) return PYTHON;
        return nccl_echo(f, s, n, &h, line, tag, lineno);
    }
    int channel = !rank && starts_len(m, mn, "Channel ", 8);
    int network = 0, coll = 0, matrix = 0;  /* _debug's branches that set a setting: no-ops once it is set */
    if (!rank && !channel) {
        /* _debug's elif branches, in its order (those after " coll channels," are nccl_acted_on's) */
        static const struct { const char *p; Py_ssize_t k; } BRANCHES[] = {
            {"RCCL version", 12}, {"Invalid value ", 14},
        };
        for (size_t k = 0; !version && !rccl && k < sizeof(BRANCHES) / sizeof(*BRANCHES); k++)
            if (starts_len(m, mn, BRANCHES[k].p, BRANCHES[k].k)) return PYTHON;
        network = !version && !rccl && starts_len(m, mn, "Using network", 13);
        coll = !network && find(m, mn, " coll channels,", 15) != NULL;
        if (coll) {  /* read_int() of its counts warns past NCCL_INT_DIGITS digits: every run short */
            for (Py_ssize_t i = 0, run = 0; i < mn; i++)
                if ((run = is_digit(m[i]) ? run + 1 : 0) > NCCL_INT_DIGITS) return PYTHON;
        }
        /* The Func/Proto/Algo table: open for its rows, closed by the first line that is not one. An
         * NCCL INFO head is not (_MATRIX_ROW wants `\w+ |` first, a head has a ':' or '-' there):
         * a header followed by one (the rows printed elsewhere, or not at all) only clears the
         * columns. Any other next line (a row, a blank, the chunk's end) is Python's. */
        matrix = !network && !coll && starts_len(m, mn, "Enabled NCCL Func/Proto/Algo Matrix", 35);
        if (matrix && !nccl_next_is_head(f)) return PYTHON;
    }
    if (f->fetched == 0 && !nccl_fetch(f)) return PYTHON;
    if ((network && !f->has_network) || (coll && !f->has_channels)) return PYTHON;
    if (version && !nccl_version_held(f, m, mn)) return PYTHON;  /* the first sets the settings */
    if (rccl && (!f->has_version || !nccl_rccl_shape(m, mn))) return PYTHON;
    unsigned fl;
    PyObject *tag;
    int status = nccl_head_flags(f, s, &h, head_hash, &fl, &tag);
    if (status != OK) return status;
    if (fl & NP_HOSTLESS) {
        if ((status = nccl_set_host(f, s, n, &h, line, tag, nccl_lines)) != OK) return status;
        fl = f->heads[f->last_head].flags = (fl & ~NP_HOSTLESS) | NP_TAG;
    }
    if (fl & NP_NEW) {  /* the process's first line: _tag makes it */
        if ((status = nccl_new_process(f, s, n, &h, line, tag, nccl_lines, lineno)) != OK) return status;
        fl = f->heads[f->last_head].flags = (fl & ~NP_NEW) | NP_TAG;
    }
    if (!(fl & NP_TAG)) return PYTHON;  /* _tag sets its pid */
    if (rank) {
        /* _tag sets a missing rank; _rank the thread's, process's and device's, the largest counts */
        long long nranks = nccl_count(m, ra, re), nodes = na >= 0 ? nccl_count(m, na, ne) : -1;
        if (nranks < 0 || (na >= 0 && nodes < 0)) return PYTHON;  /* read_int() would warn */
        unsigned all = NP_RANK | NP_TR | NP_PR | NP_DR;
        int larger = f->nranks < 0 || nranks > f->nranks || (na >= 0 && (f->nnodes < 0 || nodes > f->nnodes));
        if ((fl & all) != all || larger) {
            status = nccl_first_rank(f, s, n, &h, line, tag, nccl_lines, lineno, m, rk, nccl_digits(m, mn, rk), nranks,
                                     nodes);
            if (status != OK) return status;
            f->heads[f->last_head].flags |= all | NP_TP | NP_PP;  /* (a rank now: _channel keeps no peer rank) */
        }
    } else if (channel) {
        Py_ssize_t la = 0, le = 0, end = nccl_connection(m, mn, &la, &le);
        if (end >= 0) {
            PyObject *fresh;
            status = nccl_transport_of(f, m, mn, end, &fresh);
            if (status != OK) return status;
            if ((fl & (NP_TP | NP_PP)) != (NP_TP | NP_PP) || fresh) {
                status = nccl_first_connection(f, s, &h, lineno, m, la, le, fl, fresh);
                Py_XDECREF(fresh);
                if (status != OK) return status;
            }
        } else if (nccl_ring(m, mn) && !f->ring_set) {
            return PYTHON;  /* the first ring listing gives the ring channels */
        }  /* neither: _channel does nothing */
    } else if (matrix) {
        if (PyObject_SetAttrString(f->parser, "matrix_columns", Py_None) < 0) return ERROR;
    } else if (version) {
        if (nccl_version_read(f, s, n, line, lineno) < 0) return ERROR;
    } else if (rccl) {
        if ((status = nccl_rccl_version(f, s, n, line, lineno, m, mn)) != OK) return status;  /* (offered there) */
    }
    /* offer() after the readers: of a line holding "NCCL_" (WORDS' `NCCL_X=`, `NCCL_X set to `);
     * the others hold no word _SKIP lets by (nccl_acted_on's lines are Python's) */
    if (by_literal & BIT(R_LAUNCH_ENV) && !rccl && context_offer(f->ctx, f->offer, s, n, line, lineno, 1) < 0)
        return ERROR;
    /* feed() keeps every INFO "Channel ..." line, the rank ones too */
    /* (a version, an RCCL version, a table header and an offered line act each time: no repeat of
     * them is idle, nccl_repeat) */
    int idle = !version && !rccl && !matrix && !(by_literal & BIT(R_LAUNCH_ENV));
    return nccl_keep(f, s, n, keeps ? &hash : NULL, line, tag, nccl_lines, channel_lines,
                     starts_len(m, mn, "Channel ", 8), idle);
}
