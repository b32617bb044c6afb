/* The native line scanner of the parse engine (ingest/parsers/native.py drives it).
 *
 * It walks a chunk's lines (a list of str) and, for each line, either does exactly what feeding
 * that line to the Tagger and to every format parser would do (records into its own column
 * buffers, the parsers' state moved on), or stops and hands the line back to Python. It takes
 * only lines it can read exactly, in these shapes (FORMATS §1.1, §6):
 *
 *   - an EAGLE profile block: its `[NAME_PROFILE] window=N ...` header, `Name: X ms/cyc (P%)`
 *     phase lines and the `Accept len:` / `Throughput:` values, the block's end;
 *   - an SGLang `Decode batch` / `Prefill batch` line under a `[date time TPn]` prefix whose
 *     label the Tagger knows already;
 *   - an NCCL line that both the Tagger and nccl_debug have seen before (a repeated channel line);
 *   - an nccl-tests table row of a named op, a device row of a known process, a comment line that
 *     changes nothing but the op it names, a table header seen before, a footer that warns of
 *     nothing (_scan_tests.h);
 *   - the rows and sections of an open serving bench result block, vLLM engine and V1 SpecDecoding
 *     lines, lines of vLLM processes the Tagger knows, lines only launch_env's STARTS names
 *     (_scan_vllm.h says which exactly); a block's footer or the next title, its records written as
 *     its owner writes them, the client's settings lines, a `#` comment of non-ASCII text no reader
 *     acts on (a copied block's progress bar) (_scan_bench.h);
 *   - an NCCL INFO line of a process both know, where its effect is one _scan_nccl.h makes as they do;
 *     a WARN line warned before, a bare `NCCL version` line once its settings are held
 *     (_scan_nccl_other.h);
 *   - a rule of dashes, a line holding the Tagger's `environ` but no env dump;
 *   - an env dump, a launch command (its flags, prompt and shell words) or export, a test's or
 *     SGLang's command that sets nothing new, a line naming NCCL that no reader acts on
 *     (_scan_env.h; offered to the context watcher in C, _scan_context.h);
 *   - a line that holds none of the readers' trigger literals and starts like none of their
 *     STARTS (and `[` lines the Tagger tags "main" or by a known label);
 *   - any of these behind MPI's `[job,rank]<stdout>:` tag, taken off here (a text.MpiLine in a
 *     list), once the Tagger has made the rank's process (mpi_line).
 *
 * Anything else — a non-ASCII line (but that comment), an MPI-tagged line of a new rank, a first record (formats
 * and settings are set in order by Python), a number outside the plain grammar, a duplicate key —
 * stops the scan; Python feeds that line (parsers/__init__.py, _parse_native). What "exactly"
 * means is pinned by tests/test_parsers_native.py: the records and state equal the line-at-a-time
 * engine's on random mixes of every sample, damaged, at every chunk size.
 *
 * Reader bits follow the engine's readers list: the Tagger, then PARSERS in order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>  /* T_OBJECT_EX, READONLY: a record's slots (_scan_nccl.h nccl_value) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __SSE2__
#include <emmintrin.h>  /* (every x86-64) */
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1  /* built for any x86-64; taken only where the CPU has AVX2 (avx2_ok) */
#endif

enum { R_TAGGER, R_EAGLE, R_SGLANG, R_VLLM, R_LLAMACPP, R_NCCL_DEBUG, R_NCCL_TESTS, R_LAUNCH_ENV, R_COUNT };
#define BIT(r) (1u << (r))

/* Settings the Python side passes as flags: first records are set by Python, in order. */
enum {
    F_EAGLE_FORMAT = 1, F_ALGORITHM = 2, F_STEPS = 4, F_DECODE_FORMAT = 8, F_PREFILL_FORMAT = 16, F_ENGINE = 32,
    F_MAIN = 64,  /* the Tagger has its "main" process: a line it tags "main" changes nothing now */
};


#define MAX_LITERALS 64
#define MAX_FIELDS 48

typedef struct { double *v; Py_ssize_t n, cap; } dbuf;
typedef struct { int64_t *v; Py_ssize_t n, cap; } ibuf;

/* Room for one more value: the rare path out of line, the push itself inlined. */
static __attribute__((noinline)) int grow(void **v, Py_ssize_t *cap, size_t size) {
    Py_ssize_t more = *cap ? *cap * 2 : 4096;
    void *p = realloc(*v, (size_t)more * size);
    if (!p) { PyErr_NoMemory(); return -1; }
    *v = p, *cap = more;
    return 0;
}

static inline int dpush(dbuf *b, double x) {
    if (__builtin_expect(b->n == b->cap, 0) && grow((void **)&b->v, &b->cap, sizeof(double)) < 0) return -1;
    b->v[b->n++] = x;
    return 0;
}

static inline int ipush(ibuf *b, int64_t x) {
    if (__builtin_expect(b->n == b->cap, 0) && grow((void **)&b->v, &b->cap, sizeof(int64_t)) < 0) return -1;
    b->v[b->n++] = x;
    return 0;
}

/* What a decode (or prefill) line's keys made: SGLang prints the same keys in the same order line
 * after line, so the last line's pieces (their text before the ':', as printed) are kept with what
 * their keys were looked up to; a line whose pieces start with the same texts is split by comparing
 * them, its keys not lowered, hashed and looked up again. */
typedef struct {
    int count;  /* pieces (every one a field); 0: none kept */
    char raw[2048];
    Py_ssize_t raw_at[MAX_FIELDS], raw_len[MAX_FIELDS];
    int metric[MAX_FIELDS];  /* lookup() of each field's key */
    int tput, accept, graph, news;  /* the fields get() finds, -1 for none (news: #new-token or #new-seq) */
} Shape;

typedef struct {
    char *text;
    Py_ssize_t len;
    int metric;  /* index in the string table of the metric it becomes */
    uint32_t hash;
} keymap;

/* The context Watcher bound to the scanner (env_bind), whose offer() every format's lines are offered
 * to in C (_scan_context.h). */
typedef struct {
    PyObject *watcher;               /* the bound Watcher, NULL when none */
    PyObject *candidates, *dump_lines;  /* its sets (fetched each scan call) */
    Py_ssize_t max;                  /* context.MAX_CANDIDATES */
    int fetched;                     /* 0 not yet this call, 1 read, -1 unreadable (offer() is called) */
    int truncated;                   /* its `truncated` is known True (read at the fetch, or set since) */
} context_fast;

typedef struct {
    PyObject_HEAD
    /* trigger literals, each with its reader, and a filter on their first two bytes */
    char *lit[MAX_LITERALS];
    Py_ssize_t lit_len[MAX_LITERALS];
    int lit_reader[MAX_LITERALS];  /* -1: the scanner's own literal, no reader's */
    unsigned lit_bit[MAX_LITERALS];  /* BIT(lit_reader), 0 for the scanner's own */
    int nlit;
    uint8_t bigram[65536 / 8];
    uint64_t by_first[256];  /* the literals that start with each byte */
    int lit_decode, lit_prefill;  /* the literals "Decode batch" and "Prefill batch" */
    int lit_profile;  /* the literal "_PROFILE]" (eagle_profile's), -1 when it is not one */
    int lit_tok;  /* "tok/", the scanner's own */
    /* Fingerprints of the literals' first three bytes for the vector search (scan_text): per byte
     * place, per nibble, the buckets (8) holding a literal with that nibble there. */
    uint8_t fp_lo[3][16], fp_hi[3][16];
    /* The literals by their first three bytes (TRI_SLOTS, open addressing, at most half full: 64
     * literals): a place the fingerprints pass is looked up once, and only the literals that start so
     * are compared (a bucket's literals each compared at every place its tables passed were half of
     * line_avx2 on bench logs, a `-----Name-----` rule's every dash such a place). */
    struct { uint32_t key; uint64_t lits; } tri[128];
    int fingerprinted;  /* every literal has 3 bytes at least: the vector search may run */
    keymap *decode; int ndecode;
    keymap *prefill; int nprefill;
    /* strings of the output columns: a list of str, and the same as C strings for lookups */
    PyObject *strings;
    char **str_text; Py_ssize_t *str_len; uint32_t *str_hash; int nstr, capstr;
    int *str_slot; int nslots;  /* open addressing over the table: index + 1, 0 empty; at most half full */
    /* NCCL lines both the Tagger and nccl_debug are known to have read (they only ever add lines,
     * REPEATS of them): found again by a compare, no str made and looked up twice. Kept for the
     * one pair of collections they were found in (held here, so an id is never another's). */
    int ready;  /* __init__ ran to its end: every method refuses a Scanner made without it */
    struct { char *text; Py_ssize_t len; } nccl_seen[64];
    PyObject *nccl_of[2];  /* channel_lines, nccl_lines */
    struct nccl_fast *nccl;  /* NCCL INFO lines read here (_scan_nccl.h), NULL until nccl_bind() */
    context_fast ctx;  /* the Watcher's offer() (_scan_context.h), bound by env_bind() */
    Shape shapes[2];  /* the last decode and prefill lines' (sglang_batch) */
    /* the last SGLang label seen and its string (labels repeat line after line) */
    char last_label[64]; Py_ssize_t last_label_len; int last_label_idx;
    int s_main, s_eagle, s_decode_src, s_prefill_src, s_empty;
    int s_window_cycles, s_cycle_ms, s_accept_raw, s_tokens, s_throughput, s_graph;
    /* phases: name, ms, pct (NaN: none), window, line */
    ibuf p_name, p_window, p_line, p_source, p_process;
    dbuf p_ms, p_pct;
    /* metrics: name, value, window, line, source, rank, process */
    ibuf m_name, m_window, m_line, m_source, m_rank, m_process;
    dbuf m_value;
    struct tests_state *tests;  /* nccl-tests rows and their columns (_scan_tests.h) */
    PyObject *tests_gpu_key, *tests_hint;  /* "nccl_tests.gpu", "nccl-tests" */
    PyObject *tests_version_key, *nccl_version_key, *tests_name;  /* "nccl_tests.version", "nccl.version", "nccl_tests" */
    struct vllm_state *vllm;  /* serving bench blocks (_scan_vllm.h), made by its first bench() */
    /* MPI ranks whose process ("mpi J,R") this scan found made (mpi_process): job, rank, its string */
    struct { int64_t job, rank; int process; } mpi_known[8];
    int nmpi, mpi_evict;
} Scanner;

static int not_ready(Scanner *self);

/* ---- small string helpers ---------------------------------------------------------------- */

/* Character classes by table (one load, not a chain of compares: they run on every byte read).
 * C_LABEL: a serving bench row's label character, serving._ROW's [A-Za-z0-9 ()/%#.,\-]; C_TAIL: what
 * may follow a number row's colon (_scan_vllm.h, row_head): a number's characters and blanks; C_KEY: a
 * vLLM spec line's label character past its first, [A-Za-z -] (spec_key_at). */
enum { C_DIGIT = 1, C_WORD = 2, C_SPACE = 4, C_LABEL = 8, C_TAIL = 16, C_KEY = 32 };
#define D_ (C_DIGIT | C_WORD | C_LABEL | C_TAIL)
#define L_ (C_WORD | C_LABEL | C_KEY)
#define DIGITS_ ['0'] = D_, ['1'] = D_, ['2'] = D_, ['3'] = D_, ['4'] = D_, ['5'] = D_, ['6'] = D_, ['7'] = D_, \
    ['8'] = D_, ['9'] = D_
#define UPPER_ ['A'] = L_, ['B'] = L_, ['C'] = L_, ['D'] = L_, ['E'] = L_, ['F'] = L_, ['G'] = L_, ['H'] = L_, \
    ['I'] = L_, ['J'] = L_, ['K'] = L_, ['L'] = L_, ['M'] = L_, ['N'] = L_, ['O'] = L_, ['P'] = L_, ['Q'] = L_, \
    ['R'] = L_, ['S'] = L_, ['T'] = L_, ['U'] = L_, ['V'] = L_, ['W'] = L_, ['X'] = L_, ['Y'] = L_, ['Z'] = L_
#define LOWER_ ['a'] = L_, ['b'] = L_, ['c'] = L_, ['d'] = L_, ['e'] = L_, ['f'] = L_, ['g'] = L_, ['h'] = L_, \
    ['i'] = L_, ['j'] = L_, ['k'] = L_, ['l'] = L_, ['m'] = L_, ['n'] = L_, ['o'] = L_, ['p'] = L_, ['q'] = L_, \
    ['r'] = L_, ['s'] = L_, ['t'] = L_, ['u'] = L_, ['v'] = L_, ['w'] = L_, ['x'] = L_, ['y'] = L_, ['z'] = L_
/* Python's str.strip() and \s on ASCII: \t \n \v \f \r, \x1c-\x1f and the space (a label's too). */
#define SPACES_ [' '] = C_SPACE | C_LABEL | C_TAIL | C_KEY, ['\t'] = C_SPACE | C_TAIL, ['\n'] = 4, ['\v'] = 4, ['\f'] = 4, \
    ['\r'] = C_SPACE | C_TAIL, [0x1c] = 4, [0x1d] = 4, [0x1e] = 4, [0x1f] = 4
#define LABEL_ ['('] = C_LABEL, [')'] = C_LABEL, ['/'] = C_LABEL, ['%'] = C_LABEL, ['#'] = C_LABEL, \
    ['.'] = C_LABEL | C_TAIL, [','] = C_LABEL, ['-'] = C_LABEL | C_TAIL | C_KEY, ['+'] = C_TAIL
static const uint8_t CLASS[256] = {DIGITS_, UPPER_, LOWER_, SPACES_, LABEL_, ['_'] = C_WORD};
#undef D_
#undef L_
#undef DIGITS_
#undef UPPER_
#undef LOWER_
#undef SPACES_
#undef LABEL_

static inline int is_digit(char c) { return CLASS[(unsigned char)c] & C_DIGIT; }
static inline int is_word(char c) { return CLASS[(unsigned char)c] & C_WORD; }
static inline int is_space(char c) { return CLASS[(unsigned char)c] & C_SPACE; }
static inline int is_blank(char c) { return c == ' ' || c == '\t'; }
/* Past a run of spaces from s[i], eight a step (a bench row's padding is dozens): where it ends. */
static inline Py_ssize_t skip_pad(const char *s, Py_ssize_t n, Py_ssize_t i) {
    uint64_t w;
    while (i + 8 <= n && (memcpy(&w, s + i, 8), w == 0x2020202020202020ull)) i += 8;
    while (i < n && s[i] == ' ') i++;
    return i;
}
/* Whether a line is all whitespace (str.strip() empties it): the Tagger makes no process of it. */
static int blank_line(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!is_space(s[i])) return 0;
    return 1;
}

/* memcmp(a, b, n) == 0 inlined: the strings compared here are a few bytes long, where a call to
 * the library's memcmp costs more than the comparison. */
static inline int memeq(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    uint64_t u, v;
    uint32_t s, t;
    if (n >= 8) {  /* 8 bytes at a time, the last 8 read overlapping */
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&u, x + i, 8);
            memcpy(&v, y + i, 8);
            if (u != v) return 0;
        }
        memcpy(&u, x + n - 8, 8);
        memcpy(&v, y + n - 8, 8);
        return u == v;
    }
    if (n >= 4) {  /* the first 4 and the last 4 */
        memcpy(&s, x, 4);
        memcpy(&t, y, 4);
        if (s != t) return 0;
        memcpy(&s, x + n - 4, 4);
        memcpy(&t, y + n - 4, 4);
        return s == t;
    }
    for (; n; x++, y++, n--)
        if (*x != *y) return 0;
    return 1;
}

static inline int starts_len(const char *s, Py_ssize_t n, const char *p, Py_ssize_t k) {
    return n >= k && memeq(s, p, (size_t)k);
}
/* s[0:n] starts with the string literal p */
#define starts(s, n, p) starts_len((s), (n), (p), (Py_ssize_t)sizeof(p) - 1)

/* The first p[0:k] in s[0:n], found by memchr on its byte at `at` (a rare one is best): glibc's
 * memchr is vectorised, its memmem is not for short needles (66% of the time of a first try). */
static const char *find_at(const char *s, Py_ssize_t n, const char *p, Py_ssize_t k, Py_ssize_t at) {
    if (k > n) return NULL;
    const char *end = s + n - k + at + 1;  /* the anchor's last possible place, excluded */
    for (const char *q = s + at; q < end && (q = memchr(q, p[at], (size_t)(end - q))); q++)
        if (memeq(q - at, p, (size_t)k)) return q - at;
    return NULL;
}

static int avx2_ok = 0;  /* set at import from the CPU (and by _scan.vector() in tests) */

#ifdef HAVE_AVX2_PATH
/* find() 32 places a step: where p's first and last bytes both are, then the rest compared; from
 * `*at` on while a step's two loads lie within s[0:n] (the places left: *at, for the plain loop). */
__attribute__((target("avx2")))
static const char *find_avx2(const char *s, Py_ssize_t n, const char *p, Py_ssize_t k, Py_ssize_t *at) {
    const __m256i first = _mm256_set1_epi8(p[0]), last = _mm256_set1_epi8(p[k - 1]);
    Py_ssize_t i = 0;
    for (; i + k - 1 + 32 <= n; i += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + k - 1));
        uint32_t m = (uint32_t)_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, first), _mm256_cmpeq_epi8(b, last)));
        for (; m; m &= m - 1) {
            Py_ssize_t j = i + __builtin_ctz(m);
            if (memeq(s + j + 1, p + 1, (size_t)(k - 2))) return s + j;
        }
    }
    *at = i;
    return NULL;
}
#endif

/* The first p[0:k] in a line s[0:n]: a plain loop on its first byte where the line is short, else
 * (AVX2) 32 places a step. */
static const char *find(const char *s, Py_ssize_t n, const char *p, Py_ssize_t k) {
    Py_ssize_t i = 0;
#ifdef HAVE_AVX2_PATH
    if (avx2_ok && k >= 2 && n >= k + 31) {
        const char *got = find_avx2(s, n, p, k, &i);
        if (got) return got;
    }
#endif
    for (; i + k <= n; i++)
        if (s[i] == p[0] && memeq(s + i, p, (size_t)k)) return s + i;
    return NULL;
}

static uint32_t fnv1a(const char *s, Py_ssize_t n) {
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* The slots table twice as large, every string placed again (it stays at most half full: a
 * lookup is a probe or two however many strings a hostile log names). */
static int str_rehash(Scanner *self) {
    if (self->nslots > (1 << 29)) { PyErr_SetString(PyExc_OverflowError, "too many distinct strings"); return -1; }
    int nslots = self->nslots ? self->nslots * 2 : 1024;
    int *slots = calloc((size_t)nslots, sizeof(int));
    if (!slots) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < self->nstr; i++) {
        uint32_t slot = self->str_hash[i] & (uint32_t)(nslots - 1);
        while (slots[slot]) slot = (slot + 1) & (uint32_t)(nslots - 1);
        slots[slot] = i + 1;
    }
    free(self->str_slot);
    self->str_slot = slots, self->nslots = nslots;
    return 0;
}

/* The string's index in the table (UTF-8 bytes), added when new. */
static int intern_str(Scanner *self, const char *s, Py_ssize_t n) {
    if (self->nstr >= self->nslots / 2 && str_rehash(self) < 0) return -1;
    uint32_t hash = fnv1a(s, n), mask = (uint32_t)(self->nslots - 1), slot = hash & mask;
    for (int k; (k = self->str_slot[slot]); slot = (slot + 1) & mask)
        if (self->str_hash[k - 1] == hash && self->str_len[k - 1] == n && memeq(self->str_text[k - 1], s, (size_t)n))
            return k - 1;
    if (self->nstr == self->capstr) {
        if (self->capstr > INT32_MAX / 4) { PyErr_SetString(PyExc_OverflowError, "too many distinct strings"); return -1; }
        int cap = self->capstr ? self->capstr * 2 : 64;
        char **t = realloc(self->str_text, (size_t)cap * sizeof(char *));
        if (!t) { PyErr_NoMemory(); return -1; }
        self->str_text = t;
        Py_ssize_t *l = realloc(self->str_len, (size_t)cap * sizeof(Py_ssize_t));
        if (!l) { PyErr_NoMemory(); return -1; }
        self->str_len = l;
        uint32_t *h = realloc(self->str_hash, (size_t)cap * sizeof(uint32_t));
        if (!h) { PyErr_NoMemory(); return -1; }
        self->str_hash = h;
        self->capstr = cap;
    }
    PyObject *u = PyUnicode_DecodeUTF8(s, n, NULL);
    if (!u) return -1;
    if (PyList_Append(self->strings, u) < 0) { Py_DECREF(u); return -1; }
    Py_DECREF(u);
    char *copy = malloc((size_t)n + 1);
    if (!copy) { PyErr_NoMemory(); return -1; }
    memcpy(copy, s, (size_t)n);
    copy[n] = 0;
    self->str_text[self->nstr] = copy;
    self->str_len[self->nstr] = n;
    self->str_hash[self->nstr] = hash;
    self->str_slot[slot] = self->nstr + 1;
    return self->nstr++;
}

static PyObject *str_obj(Scanner *self, int i) { return PyList_GET_ITEM(self->strings, i); }

/* ---- numbers ------------------------------------------------------------------------------ */

/* `\d+(?:\.\d+)?` from s: its length, 0 when none. Greedy, as the regexes read it (what follows
 * a number in every pattern here is never a digit or a dot, so greedy is the only match). */
static Py_ssize_t number_len(const char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n && is_digit(s[i])) i++;
    if (i == 0) return 0;  /* (then a fraction) */
    if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
        i += 2;
        while (i < n && is_digit(s[i])) i++;
    }
    return i;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* float() of a plain decimal (`-?\d+(\.\d+)?`), correctly rounded as Python's float() is. With at
 * most 15 digits the digits are an exact double m and 10^k (k <= 22) is exact too, so m / 10^k is
 * one correctly rounded IEEE division (Clinger's fast path); anything longer goes to strtod, which
 * glibc rounds correctly. */
static double to_double(const char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    int neg = 0;
    if (n && s[0] == '-') neg = 1, i = 1;
    uint64_t m = 0;
    int digits = 0, frac = 0;  /* significant digits (leading zeros are not), digits after the dot */
    unsigned d;
    for (; i < n && (d = (unsigned char)s[i] - '0') <= 9 && digits <= 15; i++) {
        m = m * 10 + d;
        digits += m != 0;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && (d = (unsigned char)s[i] - '0') <= 9 && digits <= 15; i++) {
            m = m * 10 + d;
            digits += m != 0;
            frac++;
        }
    }
    if (i == n && digits <= 15 && frac <= 22) {
        double v = (double)m / POW10[frac];
        return neg ? -v : v;
    }
    char buf[128];
    if (n < (Py_ssize_t)sizeof(buf)) {
        memcpy(buf, s, (size_t)n);
        buf[n] = 0;
        return strtod(buf, NULL);
    }
    char *big = malloc((size_t)n + 1);
    if (!big) return NAN;
    memcpy(big, s, (size_t)n);
    big[n] = 0;
    double v = strtod(big, NULL);
    free(big);
    return v;
}

/* sglang._number: 1 with *out set, 0 for None, -1 when Python must read it (not plain). */
static int sglang_number(const char *s, Py_ssize_t n, double *out) {
    if (n == 0) return 0;
    if (n == 4 && memeq(s, "True", 4)) { *out = 1.0; return 1; }
    if (n == 5 && memeq(s, "False", 5)) { *out = 0.0; return 1; }
    while (n > 0 && s[n - 1] == '%') n--;  /* text.rstrip("%") */
    Py_ssize_t i = (n > 0 && s[0] == '-') ? 1 : 0;
    Py_ssize_t k = number_len(s + i, n - i);
    if (k == 0 || i + k != n) return -1;
    double v = to_double(s, n);
    if (!isfinite(v)) return 0;
    *out = v;
    return 1;
}

/* round(x, 6) as Python does it: the correctly rounded decimal (CPython's dtoa mode 3: the exact binary
 * value to nearest, ties to even), read back. Below 1e9 that decimal is N / 10^6, N the integer nearest
 * the exact x * 10^6 = p + e (p the rounded product, e its residual, exact by fma; p < 2^50, so p - r is
 * exact and e, at most half p's ulp, moves only a tie of p to its nearest integer r); N / 10^6 is then
 * read back by one correctly rounded division, as strtod reads the decimal (a zero keeps x's sign, as
 * dtoa's). Anything else (1e9 and past, inf, nan) goes through glibc's printf, which rounds as dtoa. */
static double round6(double x) {
    if (fabs(x) < 1e9) {
        double p = x * 1e6, e = fma(x, 1e6, -p), r = nearbyint(p), d = p - r;
        if ((d == 0.5 && e > 0) || (d == -0.5 && e < 0)) r += 2 * d;  /* past the tie: away from r */
        return r == 0 ? copysign(0.0, x) : r / 1e6;
    }
    char buf[400];
    int n = snprintf(buf, sizeof(buf), "%.6f", x);
    return to_double(buf, n);
}

/* round(v + 1, 6) of v read from the plain decimal s[0:n]. With at most 6 decimals and 15 digits
 * and v < 1e9, v + 1 is within 2^-22 of the decimal D = (m + 10^f) / 10^f (m the digits, f the
 * decimals), less than half a step of 10^-6, so round() gives D's nearest double: one exact
 * division, as to_double. Anything else is rounded through printf (round6). */
static double plus_one_round6(const char *s, Py_ssize_t n, double v) {
    uint64_t m = 0;
    int digits = 0, frac = 0, dot = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] == '.') { dot = 1; continue; }
        m = m * 10 + (uint64_t)(s[i] - '0');
        digits++;
        frac += dot;
    }
    if (digits <= 15 && frac <= 6 && v < 1e9) return (double)(m + (uint64_t)POW10[frac]) / POW10[frac];
    return round6(v + 1.0);
}

/* ---- outputs ------------------------------------------------------------------------------ */

static int add_phase_of(Scanner *self, int name, double ms, double pct, int64_t window, int64_t line, int source,
                        int process);

static int add_phase(Scanner *self, int name, double ms, double pct, int64_t window, int64_t line) {
    return add_phase_of(self, name, ms, pct, window, line, self->s_eagle, self->s_main);
}

static int add_phase_of(Scanner *self, int name, double ms, double pct, int64_t window, int64_t line, int source,
                        int process) {
    if (ipush(&self->p_name, name) < 0 || dpush(&self->p_ms, ms) < 0 || dpush(&self->p_pct, pct) < 0
        || ipush(&self->p_window, window) < 0 || ipush(&self->p_line, line) < 0 || ipush(&self->p_source, source) < 0
        || ipush(&self->p_process, process) < 0) return -1;
    return 0;
}

static int add_metric(Scanner *self, int name, double value, int64_t window, int64_t line, int source, int rank,
                      int process) {
    if (ipush(&self->m_name, name) < 0 || dpush(&self->m_value, value) < 0 || ipush(&self->m_window, window) < 0
        || ipush(&self->m_line, line) < 0 || ipush(&self->m_source, source) < 0 || ipush(&self->m_rank, rank) < 0
        || ipush(&self->m_process, process) < 0) return -1;
    return 0;
}

/* ---- which readers a line concerns: trigger literals and STARTS ----------------------------- */

/* Bits of the literals found in the line; *readers gets the readers they belong to. */
static uint64_t literals_in(Scanner *self, const char *s, Py_ssize_t n, unsigned *readers) {
    uint64_t hit = 0;
    unsigned rd = 0;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        unsigned key = ((unsigned char)s[i] << 8) | (unsigned char)s[i + 1];
        if (!(self->bigram[key >> 3] & (1u << (key & 7)))) continue;
        for (uint64_t todo = self->by_first[(unsigned char)s[i]] & ~hit; todo; todo &= todo - 1) {
            int k = __builtin_ctzll(todo);
            Py_ssize_t m = self->lit_len[k];
            if (i + m <= n && s[i + 1] == self->lit[k][1] && (m < 3 || s[i + 2] == self->lit[k][2])
                && memeq(s + i, self->lit[k], (size_t)m)) {
                hit |= 1ull << k;
                rd |= self->lit_bit[k];
            }
        }
    }
    *readers = rd;
    return hit;
}

/* The vector search a chunk kept as text (scan_text) reads a line with: from s[0], where the line
 * ends (its newline, or `left` bytes on) and its literals, as literals_in finds them, in one pass
 * of 32 bytes a step. A literal is first found by its first three bytes (Teddy's fingerprints,
 * nibble tables looked up by pshufb: a place can only be a literal's start if each of its three
 * bytes is in one bucket's tables), then the literals that start with the place's three bytes
 * (tri_lits) compared whole. Bytes past the text are never read: the
 * last steps read a copy padded with newlines. */

/* A place's first three bytes as tri[]'s key (bit 24 set: no empty slot's). */
static inline uint32_t tri_key(const char *p) {
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | 1u << 24;
}

static inline unsigned tri_home(uint32_t key) { return (key * 2654435761u) >> 25; }  /* (0..127) */

/* The literals that start with the three bytes of `key` (tri_key), 0 when none. */
static inline uint64_t tri_lits(const Scanner *self, uint32_t key) {
    for (unsigned slot = tri_home(key);; slot = (slot + 1) & 127) {
        if (self->tri[slot].key == key) return self->tri[slot].lits;
        if (!self->tri[slot].key) return 0;
    }
}

#ifdef HAVE_AVX2_PATH
__attribute__((target("avx2")))
static Py_ssize_t line_avx2(const Scanner *self, const char *s, Py_ssize_t left, uint64_t *hits, unsigned *readers) {
    const __m256i nl = _mm256_set1_epi8('\n'), low = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    __m256i lo[3], hi[3];
    for (int j = 0; j < 3; j++) {
        lo[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)self->fp_lo[j]));
        hi[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)self->fp_hi[j]));
    }
    uint64_t hit = 0;
    unsigned rd = 0;
    char pad[96];
    for (Py_ssize_t i = 0;; i += 32) {
        const char *p = s + i;
        if (left - i < 34) {  /* the three loads would pass the text's end */
            Py_ssize_t rest = left - i > 0 ? left - i : 0;
            memcpy(pad, p, (size_t)rest);
            memset(pad + rest, '\n', sizeof(pad) - (size_t)rest);
            p = pad;
        }
        __m256i v[3] = {_mm256_loadu_si256((const __m256i *)p), _mm256_loadu_si256((const __m256i *)(p + 1)),
                        _mm256_loadu_si256((const __m256i *)(p + 2))};
        uint32_t newlines = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v[0], nl));
        __m256i acc = _mm256_set1_epi8(-1);
        for (int j = 0; j < 3; j++) {
            __m256i l = _mm256_shuffle_epi8(lo[j], _mm256_and_si256(v[j], low));
            __m256i h = _mm256_shuffle_epi8(hi[j], _mm256_and_si256(_mm256_srli_epi16(v[j], 4), low));
            acc = _mm256_and_si256(acc, _mm256_and_si256(l, h));
        }
        uint32_t found = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(acc, zero));
        if (newlines) found &= (1u << __builtin_ctz(newlines)) - 1;  /* starts on this line only */
        if (found) {
            do {
                int b = __builtin_ctz(found);
                found &= found - 1;
                Py_ssize_t at = i + b;
                uint64_t todo = tri_lits(self, tri_key(p + b)) & ~hit;
                for (; todo; todo &= todo - 1) {
                    int k = __builtin_ctzll(todo);
                    Py_ssize_t m = self->lit_len[k];
                    /* no literal holds a newline: one that matches lies within the line */
                    if (at + m <= left && memeq(s + at, self->lit[k], (size_t)m)) {
                        hit |= 1ull << k;
                        rd |= self->lit_bit[k];
                    }
                }
            } while (found);
        }
        if (newlines) {
            Py_ssize_t end = i + __builtin_ctz(newlines);
            *hits = hit, *readers = rd;
            return end < left ? end : left;
        }
    }
}
#endif

static const char *BLOCK_LABELS[] = {
    "Successful requests", "Benchmark duration (s)", "Request throughput (req/s)", "Output token throughput (tok/s)",
};

/* The interned str of a name the scanner reads or sets per line (an attribute, a dict key), made once
 * and kept for the process: PyObject_GetAttrString and its kin make and hash a new str at every call,
 * which on a log of many small lines (bench blocks, llama.cpp statistics) was a tenth of the scan.
 * Keyed by the text's address, so only text of static storage (a literal: NAME, or a static table of
 * them) may be named; the table holds every such name of this file (a few dozen), so it never fills. */
#define NAME_SLOTS 512
static struct { const char *text; PyObject *str; } NAME_TABLE[NAME_SLOTS];

/* The str of static text (borrowed), or NULL with the error set. */
static PyObject *name_str(const char *text) {
    size_t slot = ((uintptr_t)text >> 3) & (NAME_SLOTS - 1);
    for (int k = 0; k < NAME_SLOTS; k++, slot = (slot + 1) & (NAME_SLOTS - 1)) {
        if (NAME_TABLE[slot].text == text) return NAME_TABLE[slot].str;
        if (NAME_TABLE[slot].text) continue;
        PyObject *str = PyUnicode_InternFromString(text);
        if (!str) return NULL;
        NAME_TABLE[slot].text = text, NAME_TABLE[slot].str = str;
        return str;
    }
    PyErr_SetString(PyExc_RuntimeError, "the scanner's table of names is full");
    return NULL;
}
#define NAME(literal) name_str("" literal "")  /* (a literal only: concatenation refuses a variable) */

/* getattr(o, name) / setattr(o, name, v) / d[name] = v / d.get(name) of static text, as their *String kin */
static PyObject *get_named(PyObject *o, const char *text) {
    PyObject *name = name_str(text);
    return name ? PyObject_GetAttr(o, name) : NULL;
}
static int set_named(PyObject *o, const char *text, PyObject *v) {
    PyObject *name = name_str(text);
    return name ? PyObject_SetAttr(o, name, v) : -1;
}
static int dict_set_named(PyObject *d, const char *text, PyObject *v) {
    PyObject *name = name_str(text);
    return name ? PyDict_SetItem(d, name, v) : -1;
}
/* (borrowed, NULL when absent or on error: as PyDict_GetItemString, which swallows errors, the error
 * of a name not made is cleared) */
static PyObject *dict_get_named(PyObject *d, const char *text) {
    PyObject *name = name_str(text);
    if (!name) { PyErr_Clear(); return NULL; }
    return PyDict_GetItem(d, name);
}
#define GET_ATTR(o, literal) get_named((o), "" literal "")
#define SET_ATTR(o, literal, v) set_named((o), "" literal "", (v))
#define DICT_SET(d, literal, v) dict_set_named((d), "" literal "", (v))
#define DICT_GET(d, literal) dict_get_named((d), "" literal "")

#include "_scan_context.h"
#include "_scan_launch.h"

/* The readers whose STARTS the line matches (their patterns are checked equal to these in
 * native.py, and the two readings against each other in tests). */
static unsigned starts_of(const char *s, Py_ssize_t n) {
    unsigned rd = 0;
    if (n == 0) return 0;
    char c = s[0];
    if (c == '(' || c == '[' || c == '#' || c == '$' || c == '+') rd |= BIT(R_TAGGER);
    if (launch_start(s, n)) rd |= BIT(R_LAUNCH_ENV);
    Py_ssize_t i = 0;
    while (i < n && is_space(s[i])) i++;
    /* nccl_tests: `#` or a digit first, or after a leading space or tab and any whitespace. */
    Py_ssize_t t = (c == ' ' || c == '\t') ? i : 0;
    if (t < n && (s[t] == '#' || is_digit(s[t]))) rd |= BIT(R_NCCL_TESTS);
    static const Py_ssize_t label_len[] = {19, 22, 26, 31};
    char f = i < n ? s[i] : 0;
    if (f != 'S' && f != 'B' && f != 'R' && f != 'O') return rd;  /* no label starts so */
    for (size_t k = 0; k < sizeof(BLOCK_LABELS) / sizeof(*BLOCK_LABELS); k++) {
        Py_ssize_t m = label_len[k];
        if (i + m < n && memeq(s + i, BLOCK_LABELS[k], (size_t)m) && s[i + m] == ':') {
            rd |= BIT(R_SGLANG) | BIT(R_VLLM);
            break;
        }
    }
    return rd;
}

/* ---- the Tagger --------------------------------------------------------------------------- */

/* `^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d` then `((?: (?:DP|TP|EP|PP)\d+)*)\]`: the length of the
 * prefix up to and with the `]`, the tags' span in *t0..*t1 (0 when the line is not so). */
static Py_ssize_t sglang_prefix(const char *s, Py_ssize_t n, Py_ssize_t *t0, Py_ssize_t *t1) {
    static const char shape[] = "[dddd-dd-dd dd:dd:dd";
    if (n < 21) return 0;
    for (int i = 0; i < 20; i++) {
        if (shape[i] == 'd' ? !is_digit(s[i]) : s[i] != shape[i]) return 0;
    }
    Py_ssize_t i = 20;
    *t0 = i;
    while (i + 3 < n && s[i] == ' ') {
        char a = s[i + 1], b = s[i + 2];
        if (!(b == 'P' && (a == 'D' || a == 'T' || a == 'E' || a == 'P'))) break;
        Py_ssize_t j = i + 3;
        while (j < n && is_digit(s[j])) j++;
        if (j == i + 3) break;
        i = j;
    }
    *t1 = i;
    if (i >= n || s[i] != ']') return 0;
    return i + 1;
}

enum { TAG_MAIN, TAG_KNOWN, TAG_PYTHON };

/* What Tagger._tag gives a line holding none of its trigger literals: "main", a SGLang label it
 * knows (*label: its index in the string table), or TAG_PYTHON (a label new to it, a vLLM or
 * nccl-tests tag, a launch line). The last label known is remembered: they repeat line after line,
 * and the Tagger never forgets one. */
static int tagger_tag(Scanner *self, const char *s, Py_ssize_t n, PyObject *labels, int *label) {
    if (n == 0) return TAG_MAIN;
    char c = s[0];
    if (c == '(' || c == '$' || c == '+') return TAG_PYTHON;
    if (c == '#') return find(s, n, "Pid", 3) ? TAG_PYTHON : TAG_MAIN;
    if (c != '[') return TAG_MAIN;
    Py_ssize_t t0, t1;
    if (!sglang_prefix(s, n, &t0, &t1) || t1 == t0) return TAG_MAIN;  /* _SGLANG needs a tag */
    const char *text = s + t0 + 1;  /* .strip(): one space led */
    Py_ssize_t len = t1 - t0 - 1;
    if (len == self->last_label_len && memeq(text, self->last_label, (size_t)len)) {
        *label = self->last_label_idx;
        return TAG_KNOWN;
    }
    PyObject *u = PyUnicode_DecodeASCII(text, len, NULL);
    if (!u) return -1;
    int known = PySet_Contains(labels, u);
    Py_DECREF(u);
    if (known <= 0) return known < 0 ? -1 : TAG_PYTHON;
    if ((*label = intern_str(self, text, len)) < 0) return -1;
    if (len <= (Py_ssize_t)sizeof(self->last_label)) {
        memcpy(self->last_label, text, (size_t)len);
        self->last_label_len = len;
        self->last_label_idx = *label;
    }
    return TAG_KNOWN;
}

/* ---- eagle_profile ------------------------------------------------------------------------ */

typedef struct {
    long window;
    int in_block;
    PyObject *seen;  /* the parser's own set */
    PyObject *names;  /* the parser's set of the phase names kept, `cap` at most (Parser.PHASE_NAMES) */
    long cap, left_out, first_left_out;  /* the phase lines of later names left out, the first one */
} Eagle;

static const char *TOTALS[] = {"cycle total", "total", "cycle"};

static int is_total(const char *s, Py_ssize_t n) {  /* name.lower() in _TOTALS */
    for (size_t k = 0; k < sizeof(TOTALS) / sizeof(*TOTALS); k++) {
        if ((Py_ssize_t)strlen(TOTALS[k]) != n) continue;
        Py_ssize_t i = 0;
        while (i < n && ((s[i] >= 'A' && s[i] <= 'Z') ? s[i] + 32 : s[i]) == TOTALS[k][i]) i++;
        if (i == n) return 1;
    }
    return 0;
}

enum { OK = 0, PYTHON = 1, ERROR = -1 };

/* `[ALG_PROFILE] rest` (eagle_profile._header): window += 1, a new block, window_cycles. */
static int eagle_header(Scanner *self, Eagle *e, const char *s, Py_ssize_t n, int flags, int64_t lineno) {
    const char *p = find(s, n, "_PROFILE]", 9);
    if (!p || s[0] != '[' || !(flags & F_ALGORITHM) || !(flags & F_EAGLE_FORMAT)) return PYTHON;
    Py_ssize_t a = p - s;
    if (a < 2) return PYTHON;  /* \w+? needs one character */
    for (Py_ssize_t i = 1; i < a; i++)
        if (!is_word(s[i])) return PYTHON;
    /* dict(re.findall(r"(\w+)=(\d+)", rest)): the last window= counts; steps= is set once. */
    const char *r = p + 9;
    Py_ssize_t m = n - (r - s), i = 0;
    const char *win = NULL;
    Py_ssize_t win_len = 0;
    while (i < m) {
        if (!is_word(r[i])) { i++; continue; }
        Py_ssize_t q = i;
        while (q < m && is_word(r[q])) q++;
        if (q + 1 < m && r[q] == '=' && is_digit(r[q + 1])) {
            Py_ssize_t d = q + 1;
            while (d < m && is_digit(r[d])) d++;
            /* \w+ greedy from the leftmost start: the key is r[i:q]. */
            if (q - i == 5 && memeq(r + i, "steps", 5) && !(flags & F_STEPS)) return PYTHON;
            if (q - i == 6 && memeq(r + i, "window", 6)) { win = r + q + 1; win_len = d - q - 1; }
            i = d;
        } else {
            i = q;  /* every start inside this word fails alike */
        }
    }
    e->window += 1;
    e->in_block = 1;
    if (PySet_Clear(e->seen) < 0) return ERROR;
    if (win && add_metric(self, self->s_window_cycles, to_double(win, win_len), e->window, lineno,
                          self->s_eagle, self->s_empty, self->s_main) < 0) return ERROR;
    return OK;
}

/* `  Name: X ms/cyc (P%)` (eagle_profile._PHASE, _phase): a phase, or cycle_ms for a total. */
static int eagle_phase(Scanner *self, Eagle *e, const char *s, Py_ssize_t n, int flags, int64_t lineno) {
    if (!(flags & F_EAGLE_FORMAT)) return PYTHON;
    Py_ssize_t i = 0;
    while (i < n && is_blank(s[i])) i++;
    if (i < n && is_space(s[i])) return PYTHON;
    if (i >= n || !((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) return PYTHON;
    const char *colon = memchr(s + i, ':', (size_t)(n - i));
    if (!colon) return PYTHON;
    Py_ssize_t c = colon - s, g = c;
    while (g > i && is_blank(s[g - 1])) g--;  /* the name, its trailing \s* left to the regex's \s* */
    for (Py_ssize_t k = i; k < g; k++) {
        char ch = s[k];
        if (!(is_word(ch) || ch == ' ' || ch == '/' || ch == '+' || ch == '-')) return PYTHON;
    }
    Py_ssize_t j = c + 1;
    if (j >= n || !is_blank(s[j])) return PYTHON;
    while (j < n && is_blank(s[j])) j++;
    Py_ssize_t k = number_len(s + j, n - j);
    if (!k) return PYTHON;
    double ms = to_double(s + j, k);
    j += k;
    while (j < n && is_blank(s[j])) j++;
    if (!starts(s + j, n - j, "ms/")) return PYTHON;
    j += 3;
    Py_ssize_t unit = 0;
    if (starts(s + j, n - j, "cycle")) unit = 5;
    else if (starts(s + j, n - j, "cyc") || starts(s + j, n - j, "step") || starts(s + j, n - j, "iter"))
        unit = s[j] == 'c' ? 3 : 4;
    else return PYTHON;
    if (j + unit < n && is_word(s[j + unit])) {
        /* "cyc" then a word character: the regex tries "cycle" (taken above when it is there). */
        return PYTHON;
    }
    j += unit;
    /* (?:\s*\(\s*(\d+(?:\.\d+)?)\s*%\s*\))? */
    double pct = NAN;
    Py_ssize_t t = j;
    while (t < n && is_space(s[t])) t++;
    if (t < n && s[t] == '(') {
        t++;
        while (t < n && is_space(s[t])) t++;
        Py_ssize_t d = number_len(s + t, n - t);
        if (d) {
            Py_ssize_t u = t + d;
            while (u < n && is_space(s[u])) u++;
            if (u < n && s[u] == '%') {
                u++;
                while (u < n && is_space(s[u])) u++;
                if (u < n && s[u] == ')') pct = to_double(s + t, d);
            }
        }
    }
    int total = is_total(s + i, g - i);
    if (!total && PySet_GET_SIZE(e->names) >= e->cap) {
        /* The cap reached: a name not kept is left out (eagle_profile._phase) before it is interned,
         * so a log of endless distinct names grows no table here either. */
        PyObject *probe = PyUnicode_DecodeUTF8(s + i, g - i, NULL);
        if (!probe) return ERROR;
        int kept = PySet_Contains(e->names, probe);
        Py_DECREF(probe);
        if (kept < 0) return ERROR;
        if (!kept) {
            e->left_out += 1;
            if (!e->first_left_out) e->first_left_out = (long)lineno;
            return OK;
        }
    }
    int name = intern_str(self, s + i, g - i);
    if (name < 0) return ERROR;
    PyObject *name_obj = str_obj(self, name);
    if (!total && PySet_Add(e->names, name_obj) < 0) return ERROR;
    if (!e->in_block) {
        int seen = PySet_Contains(e->seen, name_obj);
        if (seen < 0) return ERROR;
        if (seen || e->window == 0) {
            /* Headerless (non-speculative) output: a repeated phase name opens the next window. */
            e->window += 1;
            if (PySet_Clear(e->seen) < 0) return ERROR;
        }
    }
    if (PySet_Add(e->seen, name_obj) < 0) return ERROR;
    if (total)
        return add_metric(self, self->s_cycle_ms, ms, e->window, lineno, self->s_eagle, self->s_empty, self->s_main);
    return add_phase(self, name, ms, pct, e->window, lineno);
}

/* What follows a value's label: `\s*:\s+(\d+(?:\.\d+)?)\s*(tok/s)?\s*$` (1, *v set) or not (0). */
static int value_rest(const char *s, Py_ssize_t n, Py_ssize_t j, double *v, Py_ssize_t *at, Py_ssize_t *len) {
    while (j < n && is_space(s[j])) j++;
    if (j >= n || s[j] != ':') return 0;
    j++;
    if (j >= n || !is_space(s[j])) return 0;
    while (j < n && is_space(s[j])) j++;
    Py_ssize_t k = number_len(s + j, n - j);
    if (!k) return 0;
    *v = to_double(s + j, k);
    *at = j, *len = k;
    j += k;
    while (j < n && is_space(s[j])) j++;
    if (starts(s + j, n - j, "tok/s")) j += 5;
    while (j < n && is_space(s[j])) j++;
    return j == n;
}

/* A line with neither "_PROFILE]" nor "ms/" while a block is open (eagle_profile.feed): an
 * `Accept len:` / `Throughput:` value (_VALUE), another indented line, or the block's end. */
static int eagle_busy(Scanner *self, Eagle *e, const char *s, Py_ssize_t n, int64_t lineno) {
    if (n == 0 || !is_blank(s[0])) {
        if (n && is_space(s[0])) return PYTHON;  /* _VALUE's \s+ takes it, startswith(" ") does not */
        e->in_block = 0;
        return OK;
    }
    Py_ssize_t i = 0;
    while (i < n && is_space(s[i])) i++;
    double v;
    Py_ssize_t vat = 0, vlen = 0;
    /* (Accept len|Accept length|Throughput): the alternatives in the regex's order. */
    int label = -1;
    if (starts(s + i, n - i, "Accept len") && value_rest(s, n, i + 10, &v, &vat, &vlen)) label = 0;
    else if (starts(s + i, n - i, "Accept length") && value_rest(s, n, i + 13, &v, &vat, &vlen)) label = 0;
    else if (starts(s + i, n - i, "Throughput") && value_rest(s, n, i + 10, &v, &vat, &vlen)) label = 1;
    if (label < 0) return OK;  /* indented, not a value: the block goes on */
    if (label == 1)
        return add_metric(self, self->s_throughput, v, e->window, lineno, self->s_eagle, self->s_empty, self->s_main);
    if (add_metric(self, self->s_accept_raw, v, e->window, lineno, self->s_eagle, self->s_empty, self->s_main) < 0)
        return ERROR;
    /* The profile counts accepted draft tokens; a cycle also emits the bonus token. */
    return add_metric(self, self->s_tokens, plus_one_round6(s + vat, vlen, v), e->window, lineno, self->s_eagle,
                      self->s_empty, self->s_main);
}

/* ---- sglang batch lines ------------------------------------------------------------------- */

typedef struct { const char *key; Py_ssize_t klen; const char *val; Py_ssize_t vlen; uint32_t hash; } field;

static void strip(const char **s, Py_ssize_t *n) {
    while (*n > 0 && is_space((*s)[0])) (*s)++, (*n)--;
    while (*n > 0 && is_space((*s)[*n - 1])) (*n)--;
}

/* sglang.split_fields; -1 when a key repeats (dict order: the first place, the last value).
 * raw[2i], raw[2i+1]: where field i's piece starts in the body and its text before the ':';
 * *every: whether every piece had a ':' (no piece was left out). */
static int split_fields(const char *body, Py_ssize_t n, field *out, char *keys, Py_ssize_t keys_cap, Py_ssize_t *raw,
                        int *every) {
    int count = 0;
    *every = 1;
    Py_ssize_t used = 0, start = 0;
    while (start <= n) {
        /* The piece up to the next ", " and its first ':', in one pass. */
        Py_ssize_t end = start, at = -1;
        for (; end < n; end++) {
            char c = body[end];
            if (c == ',' && end + 1 < n && body[end + 1] == ' ') break;
            if (c == ':' && at < 0) at = end;
        }
        int sep = end < n;
        const char *piece = body + start;
        Py_ssize_t plen = end - start;
        const char *colon = at < 0 ? NULL : body + at;
        if (!colon) *every = 0;
        if (colon) {
            const char *k = piece, *v = colon + 1;
            Py_ssize_t kl = colon - piece, vl = plen - kl - 1;
            if (count < MAX_FIELDS) raw[2 * count] = start, raw[2 * count + 1] = kl;
            strip(&k, &kl);
            strip(&v, &vl);
            while (vl > 0 && v[vl - 1] == ',') vl--;
            strip(&v, &vl);
            if (count == MAX_FIELDS || used + kl > keys_cap) return -1;
            char *lower = keys + used;
            uint32_t h = 2166136261u;  /* fnv1a of the lowered key, as it is made */
            for (Py_ssize_t i = 0; i < kl; i++) {
                lower[i] = (char)(k[i] + ((unsigned char)(k[i] - 'A') < 26u) * 32);
                h = (h ^ (unsigned char)lower[i]) * 16777619u;
            }
            used += kl;
            for (int f = 0; f < count; f++)
                if (out[f].hash == h && out[f].klen == kl && memeq(out[f].key, lower, (size_t)kl)) return -1;
            out[count++] = (field){lower, kl, v, vl, h};
        }
        if (!sep) break;
        start = end + 2;
    }
    return count;
}

static const field *get_len(const field *f, int n, const char *key, Py_ssize_t k) {
    uint32_t h = fnv1a(key, k);
    for (int i = 0; i < n; i++)
        if (f[i].hash == h && f[i].klen == k && memeq(f[i].key, key, (size_t)k)) return &f[i];
    return NULL;
}

#define get(f, n, key) get_len((f), (n), (key), (Py_ssize_t)sizeof(key) - 1)

static int lookup(const keymap *map, int n, const field *f) {
    for (int i = 0; i < n; i++)
        if (map[i].hash == f->hash && map[i].len == f->klen && memeq(map[i].text, f->key, (size_t)f->klen))
            return map[i].metric;
    return -1;
}


static int field_at(const field *f, int nf, const field *one) { return one && one - f < nf ? (int)(one - f) : -1; }

/* The shape of fields just split (`every`: no piece was left out), for this line and the next. */
static void shape_learn(Scanner *self, Shape *sh, int decode, const char *body, const field *f, int nf,
                        const Py_ssize_t *raw, int every) {
    const keymap *map = decode ? self->decode : self->prefill;
    int nmap = decode ? self->ndecode : self->nprefill;
    Py_ssize_t used = 0;
    sh->count = 0;
    for (int i = 0; i < nf; i++) {
        sh->metric[i] = lookup(map, nmap, &f[i]);
        if (every && used + raw[2 * i + 1] <= (Py_ssize_t)sizeof(sh->raw)) {
            memcpy(sh->raw + used, body + raw[2 * i], (size_t)raw[2 * i + 1]);
            sh->raw_at[i] = used, sh->raw_len[i] = raw[2 * i + 1];
            used += raw[2 * i + 1];
        } else {
            every = 0;
        }
    }
    if (decode) {
        sh->tput = field_at(f, nf, get(f, nf, "gen throughput (token/s)"));
        sh->accept = field_at(f, nf, get(f, nf, "accept len"));
        const field *graph = get(f, nf, "cuda graph");
        sh->graph = field_at(f, nf, graph ? graph : get(f, nf, "cpu graph"));
        sh->news = -1;
    } else {
        sh->tput = sh->accept = sh->graph = -1;
        sh->news = (get(f, nf, "#new-token") || get(f, nf, "#new-seq")) ? 0 : -1;
    }
    if (every && nf > 0) sh->count = nf;
}

/* The body split by a kept shape: each field's value in f[i] (its key is the shape's), or -1 when
 * the pieces are not the shape's (the caller splits it in full). */
static int split_shaped(const Shape *sh, const char *body, Py_ssize_t n, field *f) {
    Py_ssize_t start = 0;
    for (int i = 0; i < sh->count; i++) {
        Py_ssize_t kl = sh->raw_len[i];
        /* The piece's text before its first ':' is the kept one (which holds no ':' and no ", "). */
        if (start + kl >= n || body[start + kl] != ':' || !memeq(body + start, sh->raw + sh->raw_at[i], (size_t)kl))
            return -1;
        Py_ssize_t v0 = start + kl + 1, end = v0;
        for (; end < n; end++)
            if (body[end] == ',' && end + 1 < n && body[end + 1] == ' ') break;
        const char *v = body + v0;
        Py_ssize_t vl = end - v0;
        strip(&v, &vl);
        while (vl > 0 && v[vl - 1] == ',') vl--;
        strip(&v, &vl);
        f[i].val = v, f[i].vlen = vl;
        if (end >= n) return i == sh->count - 1 ? sh->count : -1;
        start = end + 2;
    }
    return -1;  /* more pieces than the shape's */
}

/* The sglang parser's window counters (its `windows` and `prefill_windows` dicts, by DP rank) as a
 * scan moves them on: read from the dicts at a rank's first line in the scan, written back once
 * at its end (state_out), not a dict lookup, an int and a dict store a line. Python runs nothing
 * during a scan, so no one else reads or writes them meanwhile. */
#define WINDOW_SLOTS 16
typedef struct {
    PyObject *dict[2];  /* decode, prefill */
    struct { int kind, rank; long window; } slot[WINDOW_SLOTS];
    int n;
} Windows;

/* The rank's next window in `kind`'s counter (1 for a rank not seen yet); -1 on error. */
static long next_window(Scanner *self, Windows *w, int kind, int rank) {
    for (int i = 0; i < w->n; i++)
        if (w->slot[i].kind == kind && w->slot[i].rank == rank) return ++w->slot[i].window;
    PyObject *key = str_obj(self, rank), *dict = w->dict[kind];
    PyObject *old = PyDict_GetItemWithError(dict, key);
    long window = old ? PyLong_AsLong(old) + 1 : 1;
    if ((old == NULL && PyErr_Occurred()) || (window == 0 && PyErr_Occurred())) return -1;
    if (w->n < WINDOW_SLOTS) {
        w->slot[w->n].kind = kind, w->slot[w->n].rank = rank, w->slot[w->n].window = window;
        w->n++;
        return window;
    }
    PyObject *v = PyLong_FromLong(window);  /* more ranks than slots: this one is written at once */
    int bad = !v || PyDict_SetItem(dict, key, v) < 0;
    Py_XDECREF(v);
    return bad ? -1 : window;
}

/* The counters moved on in the scan, into their dicts (in the order their ranks came). */
static int windows_out(Scanner *self, Windows *w) {
    int bad = 0;
    for (int i = 0; i < w->n; i++) {
        PyObject *v = PyLong_FromLong(w->slot[i].window);
        if (!v || PyDict_SetItem(w->dict[w->slot[i].kind], str_obj(self, w->slot[i].rank), v) < 0) bad = 1;
        Py_XDECREF(v);
    }
    w->n = 0;
    return bad ? -1 : 0;
}

/* A `[date time TAGS] Decode batch ...` or `... Prefill batch ...` line (sglang._decode, _prefill). */
static int sglang_batch(Scanner *self, Windows *windows, const char *s, Py_ssize_t n, int decode, int flags,
                        int64_t lineno, int process, int need_record) {
    if (!(flags & F_ENGINE) || !(flags & (decode ? F_DECODE_FORMAT : F_PREFILL_FORMAT))) return PYTHON;
    const char *word = decode ? "Decode batch" : "Prefill batch";
    Py_ssize_t wl = decode ? 12 : 13;
    Py_ssize_t t0 = 0, t1 = 0, end = sglang_prefix(s, n, &t0, &t1), j;
    if (end && end < n && s[end] == ' ' && starts_len(s + end + 1, n - end - 1, word, wl)) {
        j = end + 1;  /* `[date time TAGS] Decode batch`: the rank is the prefix's first DP tag */
    } else {
        /* Any other prefix (none; `date LEVEL pid [file:line] ` of newer SGLang): the batch is the
         * first one in the line (_DECODE.search), and its rank "" unless the text before it could
         * hold a `[date ...] ` prefix or a `DPn TPn` tag (sglang._rank): those go to Python. */
        const char *at = find(s, n, word, wl);
        if (!at) return PYTHON;
        j = at - s;
        for (Py_ssize_t i = 0; i < j; i++)
            if ((s[i] == '[' && is_digit(s[i + 1])) || (s[i] == 'D' && s[i + 1] == 'P')) return PYTHON;
        t0 = t1 = 0;
    }
    j += wl;
    /* (?: \[\d+\])?[.,]?\s* */
    if (j + 2 < n && s[j] == ' ' && s[j + 1] == '[' && is_digit(s[j + 2])) {
        Py_ssize_t d = j + 2;
        while (d < n && is_digit(s[d])) d++;
        if (d < n && s[d] == ']') j = d + 1;
    }
    if (j < n && (s[j] == '.' || s[j] == ',')) j++;
    while (j < n && is_space(s[j])) j++;
    field f[MAX_FIELDS];
    Shape *sh = &self->shapes[decode ? 0 : 1];
    int nf = sh->count ? split_shaped(sh, s + j, n - j, f) : -1;
    if (nf < 0) {
        char keys[4096];
        Py_ssize_t raw[2 * MAX_FIELDS];
        int every;
        nf = split_fields(s + j, n - j, f, keys, sizeof(keys), raw, &every);
        if (nf < 0) return PYTHON;
        shape_learn(self, sh, decode, s + j, f, nf, raw, every);
    }
    double values[MAX_FIELDS];
    int metric[MAX_FIELDS];
    for (int i = 0; i < nf; i++) {
        metric[i] = sh->metric[i];
        if (metric[i] >= 0) {
            int got = sglang_number(f[i].val, f[i].vlen, &values[i]);
            if (got < 0) return PYTHON;
            if (got == 0) metric[i] = -1;
        }
    }
    double accept = 0;
    int has_accept = 0;
    const field *graph = NULL;
    if (decode) {
        const field *tput = sh->tput >= 0 ? &f[sh->tput] : NULL;
        double v;
        int got = tput ? sglang_number(tput->val, tput->vlen, &v) : 0;
        if (got < 0) return PYTHON;
        if (got == 0) return need_record ? PYTHON : OK;  /* a line cut before its throughput is not a whole window */
        if (sh->accept >= 0) {
            has_accept = sglang_number(f[sh->accept].val, f[sh->accept].vlen, &accept);
            if (has_accept < 0) return PYTHON;
        }
        graph = sh->graph >= 0 ? &f[sh->graph] : NULL;
    } else if (sh->news < 0) {
        return need_record ? PYTHON : OK;
    }
    /* The DP rank: the first DPn tag of the prefix, "" when one scheduler reports for all. */
    const char *rank = "";
    Py_ssize_t rank_len = 0;
    for (Py_ssize_t i = t0; i < t1;) {
        Py_ssize_t k = i + 1, e = k;
        while (e < t1 && s[e] != ' ') e++;
        if (s[k] == 'D') { rank = s + k; rank_len = e - k; break; }
        i = e;
    }
    int rank_idx = intern_str(self, rank, rank_len);
    if (rank_idx < 0) return ERROR;
    long window = next_window(self, windows, decode ? 0 : 1, rank_idx);
    if (window < 0) return ERROR;
    int source = decode ? self->s_decode_src : self->s_prefill_src;
    for (int i = 0; i < nf; i++)
        if (metric[i] >= 0 && add_metric(self, metric[i], values[i], window, lineno, source, rank_idx, process) < 0)
            return ERROR;
    if (graph && ((graph->vlen == 4 && memeq(graph->val, "True", 4))
                  || (graph->vlen == 5 && memeq(graph->val, "False", 5)))
        && add_metric(self, self->s_graph, graph->vlen == 4 ? 1.0 : 0.0, window, lineno, source, rank_idx,
                      process) < 0) return ERROR;
    /* SGLang's `accept len` counts the bonus token: it already is tokens per cycle. */
    if (has_accept > 0 && add_metric(self, self->s_tokens, accept, window, lineno, source, rank_idx, process) < 0)
        return ERROR;
    return OK;
}

#include "_scan_vllm.h"
#include "_scan_llamacpp.h"
#include "_scan_vllm_args.h"

/* ---- the scan ----------------------------------------------------------------------------- */

/* One line, s[0:n] (ASCII), with its str when the caller has one (`line`, else NULL: made
 * here if a lookup needs it): OK when it was read here, PYTHON when Python must feed it, ERROR. */
static unsigned nccl_slot(const char *s, Py_ssize_t n) {
    return (unsigned)(n * 31 + (unsigned char)s[n - 1] * 7 + (unsigned char)s[n / 2]) & 63;
}

/* 1 when the line is one both collections are known to hold (found before), else 0. */
static int nccl_known(Scanner *self, const char *s, Py_ssize_t n, PyObject *channel_lines, PyObject *nccl_lines) {
    if (n == 0 || self->nccl_of[0] != channel_lines || self->nccl_of[1] != nccl_lines) return 0;
    unsigned k = nccl_slot(s, n);
    return self->nccl_seen[k].len == n && self->nccl_seen[k].text && memeq(self->nccl_seen[k].text, s, (size_t)n);
}

static void nccl_forget(Scanner *self) {
    for (int k = 0; k < 64; k++) {
        free(self->nccl_seen[k].text);
        self->nccl_seen[k].text = NULL, self->nccl_seen[k].len = 0;
    }
    Py_CLEAR(self->nccl_of[0]);
    Py_CLEAR(self->nccl_of[1]);
}

/* Remember a line both collections hold (another line in its slot is forgotten). */
static void nccl_remember(Scanner *self, const char *s, Py_ssize_t n, PyObject *channel_lines, PyObject *nccl_lines) {
    if (n == 0) return;
    if (self->nccl_of[0] != channel_lines || self->nccl_of[1] != nccl_lines) {
        nccl_forget(self);
        Py_INCREF(channel_lines);
        Py_INCREF(nccl_lines);
        self->nccl_of[0] = channel_lines, self->nccl_of[1] = nccl_lines;
    }
    unsigned k = nccl_slot(s, n);
    char *copy = malloc((size_t)n);
    if (!copy) return;  /* not remembered: looked up again next time */
    memcpy(copy, s, (size_t)n);
    free(self->nccl_seen[k].text);
    self->nccl_seen[k].text = copy, self->nccl_seen[k].len = n;
}

#include "_scan_tests.h"
#include "_scan_bench.h"

/* ---- MPI's --tag-output: `[job,rank]<stdout>:` leading a line (text.clean, Tagger._mpi) ---------- */

/* The tag leading s[0:n] as clean() takes it off and keeps its numbers (text._WRAPPER and _MPI_TAG):
 * its length, *job and *rank; 0 where there is none taken off so. clean() looks for the tag's `>:`
 * in the line's first 24 characters only: 12 digits in all at most (so under MAX_INT_DIGITS each,
 * _MPI_TAG's bound). A `>` after the tag is a markdown quote _WRAPPER takes off too: no tag here. */
static Py_ssize_t mpi_tag(const char *s, Py_ssize_t n, int64_t *job, int64_t *rank) {
    Py_ssize_t i = 1, j, r;
    if (n < 13 || s[0] != '[') return 0;
    while (i < n && is_digit(s[i])) i++;
    j = i - 1;
    if (j == 0 || i >= n || s[i] != ',') return 0;
    Py_ssize_t r0 = ++i;
    while (i < n && is_digit(s[i])) i++;
    r = i - r0;
    if (r == 0 || j + r > 12 || n - i < 10) return 0;
    if (!memeq(s + i, "]<stdout>:", 10) && !memeq(s + i, "]<stderr>:", 10)) return 0;
    if (i + 10 < n && s[i + 10] == '>') return 0;
    int64_t a = 0, b = 0;
    for (Py_ssize_t k = 1; k <= j; k++) a = a * 10 + (s[k] - '0');
    for (Py_ssize_t k = r0; k < r0 + r; k++) b = b * 10 + (s[k] - '0');
    *job = a, *rank = b;
    return i + 10;
}

static int read_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, Eagle *e,
                     Windows *windows, PyObject *labels, PyObject *nccl_lines, PyObject *channel_lines, int flags,
                     unsigned *mask, uint64_t lits, unsigned by_literal);

#include "_scan_nccl.h"
#include "_scan_nccl_other.h"
#include "_scan_env.h"

static int scan_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, Eagle *e,
                     Windows *windows, PyObject *labels, PyObject *nccl_lines, PyObject *channel_lines, int flags,
                     unsigned *mask) {
    unsigned by_literal;
    uint64_t lits = literals_in(self, s, n, &by_literal);
    return read_line(self, s, n, line, lineno, e, windows, labels, nccl_lines, channel_lines, flags, mask, lits,
                     by_literal);
}

/* Whether the Tagger's trigger literals on a line change nothing _tag does: "environ" alone, where
 * the line holds no "pid=" (_DUMP, an env dump's `pid=N environ`, needs both). */
static int tagger_literals_idle(const Scanner *self, const char *s, Py_ssize_t n, uint64_t lits) {
    for (int k = 0; k < self->nlit; k++)
        if (lits >> k & 1 && self->lit_reader[k] == R_TAGGER && !(self->lit_len[k] == 7 && memeq(self->lit[k], "environ", 7)))
            return 0;
    return find(s, n, "pid=", 4) == NULL;
}

/* A rule of dashes (and whitespace), `-------`: the bench readers' `---` literal only, which
 * BlockReader.feed reads as a section title (_SECTION wants a name between the dashes) and the
 * rest of their feed() as nothing, with no block open; no STARTS, no context word. */
static int dash_rule(const Scanner *self, const char *s, Py_ssize_t n, uint64_t lits, unsigned by_literal,
                     unsigned by_start) {
    if (by_start || by_literal & ~(BIT(R_SGLANG) | BIT(R_VLLM))) return 0;
    for (int k = 0; k < self->nlit; k++)
        if (lits >> k & 1 && !(self->lit_len[k] == 3 && memeq(self->lit[k], "---", 3))) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] != '-' && !is_space(s[i])) return 0;
    return 1;
}

/* The line's first non-blank (space or tab, as nccl_tests.feed strips) is a digit. */
static int leading_digit(const char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    return i < n && is_digit(s[i]);
}

/* Whether launch_env, the one other reader a batch line concerns, does nothing with it: a line that
 * starts with a capital (`Decode batch. #running-req: ...`, SGLang's lines of 2024, no prefix) and
 * holds a word of context.WORDS (`throughput`) matches its STARTS' last branch only. Without "NCCL_"
 * (its trigger) its feed() reads the line as a command, and a command it acts on starts with a
 * prompt or an assignment (`User@host:~$`, `NAME=`), which launch_start_strict would have found.
 * (The unread watcher skips batch lines: context._SKIP.) Only a line that makes records is read here
 * (sglang_batch's need_record): one that makes none stays Python's, as before. */
static int sglang_launch_idle(const char *s, Py_ssize_t n, unsigned rd, unsigned by_literal) {
    return rd == (rd & (BIT(R_TAGGER) | BIT(R_SGLANG) | BIT(R_LAUNCH_ENV))) && by_literal & BIT(R_SGLANG)
        && !(by_literal & BIT(R_LAUNCH_ENV)) && n > 0 && s[0] >= 'A' && s[0] <= 'Z' && !launch_start_strict(s, n);
}

/* scan_line with the line's literals found already (`lits`, and the readers they belong to). */
static int read_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, Eagle *e,
                     Windows *windows, PyObject *labels, PyObject *nccl_lines, PyObject *channel_lines, int flags,
                     unsigned *mask, uint64_t lits, unsigned by_literal) {
    if (flags & F_BENCH) {
        int status = bench_line(self, s, n, line, e, flags, lineno, mask, lits, by_literal);
        if (status != BENCH_CLOSED) return status;
        /* the blocks are closed (no reader is busy): the line is read as any, with the flags after them */
        struct vllm_state *v = self->vllm;
        status = read_line(self, s, n, line, lineno, e, windows, labels, nccl_lines, channel_lines, v->next_flags,
                           mask, lits, by_literal);
        if (status != OK) v->reflag = 0;  /* the scan stops here: Python gives the next one its flags */
        return status;
    }
    unsigned by_start = starts_of(s, n);
    *mask = by_literal | by_start;
    /* a bench title or client line, no reader busy (_scan_vllm.h, _scan_bench.h) */
    if (by_literal == (BIT(R_SGLANG) | BIT(R_VLLM)) && (!by_start || bench_hash_idle(self, s, n, by_start))) {
        int title = bench_title(self, s, n, line, e, flags, lineno, mask, lits);
        if (title != DECLINE) return title;
        int client = bench_client(self, s, n, line, e, flags, lineno, mask, lits, by_start);
        if (client != DECLINE) return client;
    }
    int vllm = vllm_line(self, s, n, line, e, flags, lineno, lits, by_literal, by_start);  /* _scan_vllm.h */
    if (vllm != DECLINE) return vllm;
    if (by_literal && dash_rule(self, s, n, lits, by_literal, by_start))  /* the Tagger's "main" */
        return !(flags & F_MAIN) ? PYTHON : e->in_block ? eagle_busy(self, e, s, n, lineno) : OK;
    if (by_literal & BIT(R_NCCL_DEBUG) && n > 13 && s[0] == 'N' && starts_len(s, n, "NCCL version ", 13)) {
        int bare = nccl_bare_version(self, s, n, line, lineno, *mask, by_literal, lits, flags);  /* _scan_nccl_other.h */
        if (bare != PYTHON) return bare == ERROR ? ERROR : e->in_block ? eagle_busy(self, e, s, n, lineno) : OK;
    }
    unsigned rd = *mask;
    if (rd & BIT(R_NCCL_TESTS) && !(by_literal & BIT(R_NCCL_TESTS)) && rd & ~(BIT(R_TAGGER) | BIT(R_NCCL_TESTS))
        && leading_digit(s, n) && (tests_idle(self->tests, s, n) || nccl_tests_ignores(self->tests, s, n)))
        rd &= ~BIT(R_NCCL_TESTS);  /* a digit-led line of another reader's (a date): nccl_tests does nothing */
    if (rd & BIT(R_NCCL_TESTS) && !(by_start & BIT(R_NCCL_TESTS)) && rd & BIT(R_LAUNCH_ENV)) {
        /* a command naming a test's binary (`mpirun ... -x NCCL_X=1 ./all_reduce_perf`): _scan_env.h */
        int env = env_line(self, s, n, line, lineno, e, flags, rd, lits, by_start);
        if (env != DECLINE) return env;
    }
    if (rd & BIT(R_NCCL_TESTS)) return tests_line(self, s, n, lineno, e, labels, flags, rd, by_literal);
    if (rd & BIT(R_LLAMACPP)) {  /* llama.cpp's timing and slot lines (_scan_llamacpp.h) */
        /* (the STARTS of readers that do nothing with the line left out: nccl_tests' of a digit-led one) */
        int llama = llamacpp_line(self, s, n, line, lineno, e, labels, flags, lits, by_literal, by_start & rd);
        if (llama != DECLINE) return llama;
    }
    /* An NCCL line's head (`host:pid:tid [dev] `), read once: env_line declines such a line (its
     * env_head_anywhere), nccl_info reads on from it. */
    nccl_line_head head;
    Py_ssize_t head_end = rd & (BIT(R_NCCL_DEBUG) | BIT(R_LAUNCH_ENV)) ? nccl_head_start(s, n, &head) : 0;
    if (rd & (BIT(R_NCCL_DEBUG) | BIT(R_LAUNCH_ENV)) && !head_end) {  /* env dumps, launch commands, lines no reader acts on */
        int env = env_line(self, s, n, line, lineno, e, flags, rd, lits, by_start);  /* _scan_env.h */
        if (env != DECLINE) return env;
    }
    if (rd & ~(BIT(R_TAGGER) | BIT(R_EAGLE) | BIT(R_SGLANG) | BIT(R_NCCL_DEBUG)) && !nccl_launch_idle(s, n, rd, by_literal)
        && !sglang_launch_idle(s, n, rd, by_literal))
        return PYTHON;
    if (rd & BIT(R_EAGLE)) {
        /* A profile line: no other parser's, and tagged "main". */
        if (rd & (BIT(R_SGLANG) | BIT(R_NCCL_DEBUG)) || by_literal & BIT(R_TAGGER)) return PYTHON;
        int label;
        int tag = tagger_tag(self, s, n, labels, &label);
        if (tag != TAG_MAIN) return tag < 0 ? ERROR : PYTHON;
        if (!(flags & F_MAIN)) return PYTHON;  /* the Tagger makes "main" of it */
        if (self->lit_profile >= 0 ? (lits >> self->lit_profile & 1) : find(s, n, "_PROFILE]", 9) != NULL)
            return eagle_header(self, e, s, n, flags, lineno);
        if (lits >> self->lit_tok & 1) return PYTHON;  /* a summary-table row, maybe */
        return eagle_phase(self, e, s, n, flags, lineno);
    }
    if (rd & BIT(R_NCCL_DEBUG)) {
        /* A line both nccl_debug and the Tagger have read before: neither does anything with it. */
        if (rd & BIT(R_SGLANG) || s[0] == '(') return PYTHON;
        int info = head_end ? nccl_info(self, s, n, line, lineno, by_literal, nccl_lines, channel_lines, &head, head_end)
                            : PYTHON;  /* a known process's */
        if (info != PYTHON) return info == ERROR ? ERROR : e->in_block ? eagle_busy(self, e, s, n, lineno) : OK;
        /* "NCCL_" (launch_env's idle here) may be offer()'s word: only nccl_info offers such a line */
        if (by_literal & BIT(R_LAUNCH_ENV)) return PYTHON;
        if (nccl_known(self, s, n, channel_lines, nccl_lines)) return e->in_block ? eagle_busy(self, e, s, n, lineno) : OK;
        int warn = nccl_warn_line(self, s, n, line, lineno, rd, nccl_lines, channel_lines);  /* _scan_nccl_other.h */
        if (warn == PYTHON) warn = nccl_headless_rccl(self, s, n, line, lineno, rd, lits, flags);
        if (warn != PYTHON) return warn == ERROR ? ERROR : e->in_block ? eagle_busy(self, e, s, n, lineno) : OK;
        PyObject *text = line ? line : PyUnicode_DecodeASCII(s, n, NULL);
        if (!text) return ERROR;
        int seen = PySet_Contains(channel_lines, text);
        PyObject *tag = seen > 0 ? PyDict_GetItemWithError(nccl_lines, text) : NULL;
        if (!line) Py_DECREF(text);  /* the lookups are done: borrowed `tag` is the dict's */
        if (seen <= 0) return seen < 0 ? ERROR : PYTHON;
        if (!tag) return PyErr_Occurred() ? ERROR : PYTHON;
        nccl_remember(self, s, n, channel_lines, nccl_lines);
        return e->in_block ? eagle_busy(self, e, s, n, lineno) : OK;
    }
    if (by_literal & BIT(R_TAGGER) && !tagger_literals_idle(self, s, n, lits)) return PYTHON;
    int label;
    int tag = tagger_tag(self, s, n, labels, &label);
    if (tag < 0) return ERROR;
    if (tag == TAG_PYTHON) return PYTHON;
    if (tag == TAG_MAIN && !(flags & F_MAIN) && !blank_line(s, n)) return PYTHON;  /* "main" is made of it */
    int process = tag == TAG_KNOWN ? label : self->s_main;
    if (rd & BIT(R_SGLANG)) {
        uint64_t decode = 1ull << self->lit_decode, prefill = 1ull << self->lit_prefill;
        /* Only batch lines, and no block start (STARTS): the rest of sglang.feed is Python's. */
        if (by_start & BIT(R_SGLANG) || self->lit_decode < 0 || self->lit_prefill < 0) return PYTHON;
        int latency = 0;  /* sglang's `latency:` literal alone (_one_batch) */
        for (int k = 0; k < self->nlit; k++) {
            if (!(lits >> k & 1) || self->lit_reader[k] != R_SGLANG || k == self->lit_decode || k == self->lit_prefill)
                continue;
            if (self->lit_len[k] != 8 || !memeq(self->lit[k], "latency:", 8)) return PYTHON;
            latency = 1;
        }
        if (latency) {
            /* `Avg latency: 21.1 seconds` (vLLM's benchmark_latency): _one_batch reads a banner or
             * _ONE_BATCH, which names Prefill, Decode or Total; without them sglang.feed does nothing */
            if (lits & (decode | prefill) || find(s, n, "Prefill", 7) || find(s, n, "Decode", 6) || find(s, n, "Total", 5)
                || e->in_block || rd & BIT(R_LAUNCH_ENV)) return PYTHON;  /* (a line of no record: sglang_launch_idle) */
            return OK;
        }
        if ((lits & decode) && (lits & prefill)) return PYTHON;
        int in_block = e->in_block;
        /* eagle_busy on a line led by no blank: the block is over (an indented one is Python's). */
        if (in_block && n && is_space(s[0])) return PYTHON;
        if (in_block) e->in_block = 0;
        int r = sglang_batch(self, windows, s, n, (lits & decode) != 0, flags, lineno, process,
                             (rd & BIT(R_LAUNCH_ENV)) != 0);
        if (r == PYTHON) e->in_block = in_block;  /* a line handed back has changed nothing */
        return r;
    }
    return e->in_block ? eagle_busy(self, e, s, n, lineno) : OK;
}

/* The string of process "mpi J,R" (Tagger._mpi's name), where the Tagger has made it; -1 where it
 * has not (the line that makes it is Python's), -2 on an error. Made, it changes no more for a line
 * it tags alike: its rank and label are set (a non-empty str each) and stay. */
static int mpi_process(Scanner *self, int64_t job, int64_t rank) {
    for (int k = 0; k < self->nmpi; k++)
        if (self->mpi_known[k].job == job && self->mpi_known[k].rank == rank) return self->mpi_known[k].process;
    if (!self->tests || !self->tests->result) return -1;
    char name[48];
    int len = snprintf(name, sizeof(name), "mpi %lld,%lld", (long long)job, (long long)rank);
    if (len <= 0 || len >= (int)sizeof(name)) return -1;
    PyObject *processes = tests_attr(self->tests->result, "processes");
    if (!processes) return -2;
    PyObject *key = PyUnicode_FromStringAndSize(name, len);
    int known = key && PyDict_Check(processes) ? PyDict_Contains(processes, key) : key ? 0 : -1;
    Py_XDECREF(key);
    Py_DECREF(processes);
    if (known <= 0) return known < 0 ? -2 : -1;
    int process = intern_str(self, name, len);
    if (process < 0) return -2;
    int k = self->nmpi < 8 ? self->nmpi++ : (self->mpi_evict++ & 7);
    self->mpi_known[k].job = job, self->mpi_known[k].rank = rank, self->mpi_known[k].process = process;
    return process;
}

/* A line MPI's --tag-output wrapped, s[0:n] the text after its tag (as clean() leaves it), read
 * as read_line reads that text where the Tagger tags it "main": Tagger._mpi then tags it with the
 * rank's process, made already (mpi_process), and changes nothing else. Records of the line are
 * that process's. A line the Tagger would tag otherwise (a vLLM, SGLang or nccl-tests device tag,
 * an NCCL or env dump line, a launch line) and a bench block's row are Python's; a line handed
 * back goes to every reader (*mask), cleaned, as the line engine feeds it. */
static int mpi_line(Scanner *self, const char *s, Py_ssize_t n, int64_t job, int64_t rank, int64_t lineno, Eagle *e,
                    Windows *windows, PyObject *labels, PyObject *nccl_lines, PyObject *channel_lines, int flags,
                    unsigned *mask) {
    *mask = ~0u;
    if (flags & F_BENCH) return PYTHON;
    if (n && (s[0] == '(' || s[0] == '[' || s[0] == '$' || s[0] == '+' || (s[0] == '#' && find(s, n, "Pid", 3))))
        return PYTHON;
    unsigned by_literal;
    uint64_t lits = literals_in(self, s, n, &by_literal);
    /* an NCCL line of the rank's: a bare version, or an INFO line whose _mpi changes nothing (_scan_nccl.h) */
    int nccl = by_literal & BIT(R_TAGGER) && !tagger_literals_idle(self, s, n, lits);
    if (nccl && !nccl_mpi_shape(self, s, n, lits, by_literal)) return PYTHON;
    int process = mpi_process(self, job, rank);
    if (process < 0) return process == -2 ? ERROR : PYTHON;
    if (nccl && !starts_len(s, n, "NCCL version ", 13)) {
        int idle = nccl_mpi_idle(self, s, n, PyList_GET_ITEM(self->strings, process));
        if (idle != OK) return idle;
    }
    int main = self->s_main;
    self->s_main = process;  /* the process of the lines tagged "main", for this line */
    int status = read_line(self, s, n, NULL, lineno, e, windows, labels, nccl_lines, channel_lines, flags | F_MAIN,
                           mask, lits, by_literal);
    self->s_main = main;
    if (status != OK) *mask = ~0u;
    return status;
}

/* The parsers' state a scan reads and moves on (what Python holds between scans). */
typedef struct {
    PyObject *eagle;
    Windows windows;
    Eagle e;
} State;

static int state_in(State *st, PyObject *eagle, PyObject *sglang) {
    /* The parser's window counters, per DP rank: dicts it changes in place, never replaces. */
    st->eagle = eagle;
    PyObject **dicts = st->windows.dict;
    st->windows.n = 0;
    dicts[0] = PyObject_GetAttrString(sglang, "windows");
    dicts[1] = PyObject_GetAttrString(sglang, "prefill_windows");
    if (!dicts[0] || !dicts[1] || !PyDict_Check(dicts[0]) || !PyDict_Check(dicts[1])) {
        Py_XDECREF(dicts[0]); Py_XDECREF(dicts[1]);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "sglang.Parser's windows must be dicts");
        return -1;
    }
    Py_DECREF(dicts[0]);  /* borrowed from here on: the parser holds them */
    Py_DECREF(dicts[1]);
    PyObject *w = PyObject_GetAttrString(eagle, "window");
    PyObject *b = PyObject_GetAttrString(eagle, "in_block");
    st->e.seen = PyObject_GetAttrString(eagle, "seen");
    st->e.names = PyObject_GetAttrString(eagle, "names");
    /* The cap and the count of lines left out, each a C long (the window's own check, below). */
    PyObject *counts[3] = {PyObject_GetAttrString(eagle, "PHASE_NAMES"), PyObject_GetAttrString(eagle, "left_out"),
                           PyObject_GetAttrString(eagle, "first_left_out")};
    if (!w || !b || !st->e.seen || !PySet_CheckExact(st->e.seen) || !st->e.names || !PySet_CheckExact(st->e.names)
        || !counts[0] || !counts[1] || !counts[2]) {
        Py_XDECREF(w); Py_XDECREF(b); Py_XDECREF(st->e.seen); Py_XDECREF(st->e.names);
        for (int k = 0; k < 3; k++) Py_XDECREF(counts[k]);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "eagle_profile.Parser.seen and names must be sets");
        return -1;
    }
    st->e.window = PyLong_AsLong(w);
    long *into[3] = {&st->e.cap, &st->e.left_out, &st->e.first_left_out};
    for (int k = 0; k < 3; k++) {
        *into[k] = PyErr_Occurred() ? -1 : PyLong_AsLong(counts[k]);
        Py_DECREF(counts[k]);
    }
    int in_block = PyErr_Occurred() ? -1 : PyObject_IsTrue(b);
    Py_DECREF(w);
    Py_DECREF(b);
    if (in_block < 0 || st->e.cap < 0 || st->e.left_out < 0 || st->e.first_left_out < 0) {
        /* a window or count no C long holds, a bad in_block, a negative count */
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "eagle_profile.Parser's counts must not be negative");
        Py_DECREF(st->e.seen); Py_DECREF(st->e.names);
        return -1;
    }
    st->e.in_block = in_block;
    return 0;
}

/* The state after the lines read here (a line handed back changed none of it); -1 on error. */
static int state_out(Scanner *self, State *st) {
    PyObject *nw = PyLong_FromLong(st->e.window);
    PyObject *left = PyLong_FromLong(st->e.left_out), *first = PyLong_FromLong(st->e.first_left_out);
    int bad = windows_out(self, &st->windows) < 0 || !nw || PyObject_SetAttrString(st->eagle, "window", nw) < 0
        || PyObject_SetAttrString(st->eagle, "in_block", st->e.in_block ? Py_True : Py_False) < 0
        || !left || PyObject_SetAttrString(st->eagle, "left_out", left) < 0
        || !first || PyObject_SetAttrString(st->eagle, "first_left_out", first) < 0;
    Py_XDECREF(nw);
    Py_XDECREF(left);
    Py_XDECREF(first);
    Py_DECREF(st->e.seen);
    Py_DECREF(st->e.names);
    return bad ? -1 : 0;
}

/* state_out() after a scan; with the scan's error pending, that error is set aside while the
 * state is written back (no C-API call meets a pending exception) and raised after. -1: raise. */
static int finish_scan(Scanner *self, State *st, int status) {
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    if (status == ERROR) PyErr_Fetch(&type, &value, &tb);
    int bad = state_out(self, st) < 0;
    /* the rows read into open bench blocks join their lists: Python may read the blocks now */
    if (status != ERROR && !bad) bad = bench_flush(self->vllm) < 0;
    else if (self->vllm) bench_pend_clear(self->vllm);
    if (status != ERROR) return bad ? -1 : 0;
    if (bad) {  /* the state could not be written back: that error is raised */
        Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb);
        return -1;
    }
    if (!type) PyErr_SetString(PyExc_SystemError, "the scan failed without an exception");
    else PyErr_Restore(type, value, tb);
    return -1;
}

/* The (job, rank) of a text.MpiLine, its `mpi` (ints under 10**18: _MPI_TAG's bound); PYTHON for
 * any other str subclass. */
static int mpi_of(PyObject *line, int64_t *job, int64_t *rank) {
    PyObject *mpi = PyObject_GetAttrString(line, "mpi");
    if (!mpi) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return ERROR;
        PyErr_Clear();
        return PYTHON;
    }
    int status = PYTHON;
    if (PyTuple_CheckExact(mpi) && PyTuple_GET_SIZE(mpi) == 2 && PyLong_CheckExact(PyTuple_GET_ITEM(mpi, 0))
        && PyLong_CheckExact(PyTuple_GET_ITEM(mpi, 1))) {
        int o1 = 0, o2 = 0;
        long long a = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(mpi, 0), &o1);
        long long b = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(mpi, 1), &o2);
        if (PyErr_Occurred()) status = ERROR;
        else if (!o1 && !o2 && a >= 0 && b >= 0 && a < 1000000000000000000LL && b < 1000000000000000000LL)
            *job = a, *rank = b, status = OK;
    }
    Py_DECREF(mpi);
    return status;
}

/* scan(lines, start, first, eagle, sglang, labels, nccl_lines, channel_lines, flags) -> (stop, mask):
 * the lines from `start` read here up to the first Python must feed (its index, and the readers
 * it concerns), or len(lines). */
static PyObject *Scanner_scan(Scanner *self, PyObject *args) {
    PyObject *lines, *eagle, *sglang, *labels, *nccl_lines, *channel_lines;
    Py_ssize_t start;
    long long first;
    int flags;
    if (!PyArg_ParseTuple(args, "O!nLOOO!O!O!i", &PyList_Type, &lines, &start, &first, &eagle, &sglang, &PySet_Type,
                          &labels, &PyDict_Type, &nccl_lines, &PySet_Type, &channel_lines, &flags)) return NULL;
    if (not_ready(self)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(lines), i = start;
    if (start < 0 || start > n) { PyErr_SetString(PyExc_IndexError, "start outside the lines"); return NULL; }
    State st;
    if (tests_in(self) < 0 || state_in(&st, eagle, sglang) < 0) return NULL;
    nccl_fast_enter(self);
    unsigned mask = 0;
    int status = OK;
    self->nmpi = 0;  /* (Python may have made processes since) */
    for (; i < n; i++) {
        PyObject *line = PyList_GET_ITEM(lines, i);
        mask = ~0u;  /* a non-ASCII line, an MpiLine the scanner cannot read: every reader */
        if (!PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line)) { status = PYTHON; break; }
        nccl_next_line(self, lines, i + 1, NULL, NULL);
        const char *s = (const char *)PyUnicode_1BYTE_DATA(line);
        Py_ssize_t len = PyUnicode_GET_LENGTH(line);
        if (!PyUnicode_CheckExact(line)) {  /* a text.MpiLine: cleaned, its (job, rank) in `mpi` */
            int64_t job, rank;
            status = mpi_of(line, &job, &rank);
            if (status == OK)
                status = mpi_line(self, s, len, job, rank, first + i, &st.e, &st.windows, labels, nccl_lines,
                                  channel_lines, flags, &mask);
        } else {
            status = scan_line(self, s, len, line, first + i, &st.e, &st.windows, labels, nccl_lines, channel_lines,
                               flags, &mask);
        }
        if (status != OK) break;
        flags = bench_flags(self, flags);  /* a title opened the bench blocks: their rows are read on (bench_title) */
    }
    if (finish_scan(self, &st, status) < 0) return NULL;
    return Py_BuildValue("nI", i, i < n ? mask : 0u);
}

#include "_scan_clean.h"

/* A dirty line of a text chunk (text.Text), line `index` (text[pos:end] in its image, wide[index] decoded
 * where it is not ASCII), cleaned by `clean` (clean_line) and read as scan() reads a line of a list: OK, or
 * PYTHON (with its mask, ~0 for a line that is not an ASCII str), or ERROR.
 * The line after it is not looked at (NULL: a dirty line's neighbours are read as at a stop). */
static int scan_cleaned(Scanner *self, PyObject *text, PyObject *wide, Py_ssize_t index, Py_ssize_t pos,
                        Py_ssize_t end, PyObject *clean, long long lineno, State *st, PyObject *labels, PyObject *nccl_lines,
                        PyObject *channel_lines, int flags, unsigned *mask) {
    PyObject *found = NULL, *piece;
    if (PyDict_GET_SIZE(wide)) {
        PyObject *key = PyLong_FromSsize_t(index);
        if (!key) return ERROR;
        found = PyDict_GetItemWithError(wide, key);  /* (borrowed: the dict keeps it) */
        Py_DECREF(key);
        if (!found && PyErr_Occurred()) return ERROR;
        if (found && !PyUnicode_Check(found)) {
            PyErr_SetString(PyExc_TypeError, "a wide line is a str");
            return ERROR;
        }
    }
    piece = found ? Py_NewRef(found) : PyUnicode_Substring(text, pos, end);
    PyObject *line = piece ? clean_line(piece, clean) : NULL;
    Py_XDECREF(piece);
    if (!line) return ERROR;
    int status = PYTHON;
    *mask = ~0u;
    if (PyUnicode_Check(line) && PyUnicode_IS_ASCII(line)) {
        nccl_next_line(self, NULL, 0, NULL, NULL);
        const char *s = (const char *)PyUnicode_1BYTE_DATA(line);
        Py_ssize_t n = PyUnicode_GET_LENGTH(line);
        int64_t job, rank;
        /* NULL for the str, as a text's lines: whatever keeps a line's text makes its own */
        if (PyUnicode_CheckExact(line))
            status = scan_line(self, s, n, NULL, lineno, &st->e, &st->windows, labels, nccl_lines, channel_lines,
                               flags, mask);
        else if ((status = mpi_of(line, &job, &rank)) == OK)  /* a text.MpiLine: read with its rank's process */
            status = mpi_line(self, s, n, job, rank, lineno, &st->e, &st->windows, labels, nccl_lines, channel_lines,
                              flags, mask);
    } else if (PyUnicode_CheckExact(line)) {  /* a `#` comment of non-ASCII text no reader acts on (_scan_bench.h) */
        status = bench_dirty_comment(self, line, lineno, &st->e, flags, mask);
        if (status == PYTHON) *mask = ~0u;
    }
    Py_DECREF(line);
    return status;
}

/* scan_text(text, pos, index, count, first, eagle, sglang, labels, nccl_lines, channel_lines, flags,
 * stop_at) -> (index, pos, end, mask): a chunk kept as its ASCII text (text.Text), its lines read
 * in place from `pos` (line `index` of `count`), no str made a line. It stops at the first line
 * Python must feed, or at line `stop_at` (one clean() may change; -1: none): that line's index,
 * where it starts and ends in the text, and the readers it concerns; (count, len, len, 0) at
 * the end. With `wide, dirty, d, clean` (text.Text's decoded non-ASCII lines, its dirty lines, the one
 * `stop_at` is, and text.clean), a dirty line is cut (scan_cleaned), cleaned (clean_line, _scan_clean.h: as
 * text.clean cleans it, `clean` called for what it leaves) and, when that gives an ASCII
 * str, read like the others: the scan stops there only when Python must feed the cleaned line
 * (which the caller cleans again) or it is not ASCII (mask ~0). */
static PyObject *Scanner_scan_text(Scanner *self, PyObject *args) {
    PyObject *text, *eagle, *sglang, *labels, *nccl_lines, *channel_lines, *wide = NULL, *dirty = NULL, *clean = NULL;
    Py_ssize_t pos, index, count, stop_at, d = 0;
    long long first;
    int flags;
    if (!PyArg_ParseTuple(args, "UnnnLOOO!O!O!in|O!O!nO", &text, &pos, &index, &count, &first, &eagle, &sglang,
                          &PySet_Type, &labels, &PyDict_Type, &nccl_lines, &PySet_Type, &channel_lines, &flags,
                          &stop_at, &PyDict_Type, &wide, &PyList_Type, &dirty, &d, &clean))
        return NULL;
    if (not_ready(self)) return NULL;
    if (!PyUnicode_IS_ASCII(text)) { PyErr_SetString(PyExc_ValueError, "scan_text reads ASCII text"); return NULL; }
    const char *base = (const char *)PyUnicode_1BYTE_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    if (pos < 0 || pos > len) { PyErr_SetString(PyExc_IndexError, "pos outside the text"); return NULL; }
    if (index < 0 || count < index || stop_at < -1) {
        PyErr_SetString(PyExc_IndexError, "index, count or stop_at outside the text's lines");
        return NULL;
    }
    if (clean && (d < 0 || d > PyList_GET_SIZE(dirty) || !PyCallable_Check(clean))) {
        PyErr_SetString(PyExc_ValueError, "d is one of dirty's places and clean callable");
        return NULL;
    }
    State st;
    if (tests_in(self) < 0 || state_in(&st, eagle, sglang) < 0) return NULL;
    nccl_fast_enter(self);
    self->nmpi = 0;  /* (Python may have made processes since) */
    unsigned mask = 0;
    int status = OK;
    Py_ssize_t end = len;
#ifdef HAVE_AVX2_PATH
    int vector = avx2_ok && self->fingerprinted;
#else
    int vector = 0;
#endif
    for (; index < count; index++) {
        uint64_t lits = 0;
        unsigned by_literal = 0;
        if (pos > len) {  /* the text has fewer lines than `count` says: no read past its end */
            PyErr_SetString(PyExc_ValueError, "count is more than the text's lines");
            status = ERROR;
            break;
        }
        if (pos < len && base[pos] == '\n') {
            end = pos;  /* a blank line holds no literal: no search (10M of them were a cliff) */
        } else
#ifdef HAVE_AVX2_PATH
        if (vector) {
            end = pos + line_avx2(self, base + pos, len - pos, &lits, &by_literal);
        } else
#endif
        {
            const char *nl = memchr(base + pos, '\n', (size_t)(len - pos));
            end = nl ? nl - base : len;
        }
        if (index == stop_at) {
            mask = ~0u;
            status = clean ? scan_cleaned(self, text, wide, index, pos, end, clean, first + index, &st, labels, nccl_lines,
                                          channel_lines, flags, &mask)
                           : PYTHON;
            if (status != OK) break;
            flags = bench_flags(self, flags);
            /* read in C: on to the next dirty line (ascending; a bad entry only stops the scan early) */
            stop_at = -1;
            for (d++; d < PyList_GET_SIZE(dirty); d++) {
                Py_ssize_t at = PyLong_AsSsize_t(PyList_GET_ITEM(dirty, d));
                if (at == -1 && PyErr_Occurred()) { status = ERROR; break; }
                if (at > index) { stop_at = at; break; }
            }
            if (status != OK) break;
            pos = end + 1;
            continue;
        }
        if (end == pos && !(flags & F_BENCH) && !st.e.in_block) {
            pos = end + 1;  /* what read_line does with a blank line outside blocks: nothing */
            continue;
        }
        nccl_next_line(self, NULL, 0, end < len && index + 1 < count && index + 1 != stop_at ? base + end + 1 : NULL,
                       base + len);
        int64_t job, rank;
        Py_ssize_t tag = end > pos && base[pos] == '[' ? mpi_tag(base + pos, end - pos, &job, &rank) : 0;
        if (tag)  /* (a line not to clean: dirty_lines found its tag alone, and mpi_tag takes it off so) */
            status = mpi_line(self, base + pos + tag, end - pos - tag, job, rank, first + index, &st.e, &st.windows,
                              labels, nccl_lines, channel_lines, flags, &mask);
        else if (vector)
            status = read_line(self, base + pos, end - pos, NULL, first + index, &st.e, &st.windows, labels, nccl_lines,
                               channel_lines, flags, &mask, lits, by_literal);
        else
            status = scan_line(self, base + pos, end - pos, NULL, first + index, &st.e, &st.windows, labels,
                               nccl_lines, channel_lines, flags, &mask);
        if (status != OK) break;
        flags = bench_flags(self, flags);
        pos = end + 1;
    }
    if (finish_scan(self, &st, status) < 0) return NULL;
    if (index >= count) return Py_BuildValue("nnnI", count, len, len, 0u);
    return Py_BuildValue("nnnI", index, pos, end, mask);
}

/* The readers a line concerns by its literals and STARTS (what Python feeds it to). */
static PyObject *Scanner_mask(Scanner *self, PyObject *line) {
    if (not_ready(self)) return NULL;
    if (!PyUnicode_Check(line)) { PyErr_SetString(PyExc_TypeError, "a str"); return NULL; }
    if (!PyUnicode_CheckExact(line) || !PyUnicode_IS_ASCII(line)) return PyLong_FromUnsignedLong(~0u);
    const char *s = (const char *)PyUnicode_1BYTE_DATA(line);
    Py_ssize_t n = PyUnicode_GET_LENGTH(line);
    unsigned rd;
    literals_in(self, s, n, &rd);
    return PyLong_FromUnsignedLong(rd | starts_of(s, n));
}

/* masks(text) -> [mask(line) for line in text.split("\n")] for an ASCII text, its literals found
 * as scan_text finds them (the vector search where it is on): tests hold it to the readers' own. */
static PyObject *Scanner_masks(Scanner *self, PyObject *text) {
    if (not_ready(self)) return NULL;
    if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "masks reads ASCII text");
        return NULL;
    }
    const char *base = (const char *)PyUnicode_1BYTE_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text), pos = 0;
    PyObject *out = PyList_New(0);
    while (out) {
        uint64_t lits = 0;
        unsigned rd = 0;
        Py_ssize_t end;
#ifdef HAVE_AVX2_PATH
        if (avx2_ok && self->fingerprinted) {
            end = pos + line_avx2(self, base + pos, len - pos, &lits, &rd);
        } else
#endif
        {
            const char *nl = memchr(base + pos, '\n', (size_t)(len - pos));
            end = nl ? nl - base : len;
            lits = literals_in(self, base + pos, end - pos, &rd);
        }
        (void)lits;
        PyObject *m = PyLong_FromUnsignedLong(rd | starts_of(base + pos, end - pos));
        if (!m || PyList_Append(out, m) < 0) Py_CLEAR(out);
        Py_XDECREF(m);
        if (end >= len) break;
        pos = end + 1;
    }
    return out;
}

/* ---- handing records to polars: the Arrow C data interface ----------------------------------
 *
 * A kind's records leave as one Arrow struct array whose buffers are the scanner's own (moved,
 * not copied); polars imports it through `__arrow_c_array__` (the PyCapsule protocol) without a
 * Python object per value. The two structs are Arrow's ABI, as its specification writes them. */

struct ArrowSchema {
    const char *format, *name, *metadata;
    int64_t flags, n_children;
    struct ArrowSchema **children, *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length, null_count, offset, n_buffers, n_children;
    const void **buffers;
    struct ArrowArray **children, *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

#define ARROW_FLAG_NULLABLE 2
#define MAX_COLUMNS 16

typedef struct {  /* what an array owns: its buffers, and (a struct) its children */
    void *buffers[3];
    const void *views[4];  /* what ArrowArray.buffers points to (a string view array has four) */
    struct ArrowArray *children[MAX_COLUMNS];
} array_owned;

static void release_array(struct ArrowArray *a) {
    array_owned *own = a->private_data;
    for (int64_t i = 0; i < a->n_children; i++) {
        if (a->children[i]->release) a->children[i]->release(a->children[i]);
        free(a->children[i]);
    }
    for (int i = 0; i < 3; i++) free(own->buffers[i]);
    free(own);
    a->release = NULL;
}

static void release_schema(struct ArrowSchema *sc) {
    for (int64_t i = 0; i < sc->n_children; i++) {
        if (sc->children[i]->release) sc->children[i]->release(sc->children[i]);
        free(sc->children[i]);
    }
    free(sc->children);
    sc->release = NULL;
}

static void release_leaf_schema(struct ArrowSchema *sc) { sc->release = NULL; }

/* An array of n values with up to three buffers (validity, then data or offsets, then chars),
 * which it takes over (freed on release). */
static struct ArrowArray *leaf(int64_t n, int64_t nulls, void *validity, void *b1, void *b2, int nbuf) {
    struct ArrowArray *a = calloc(1, sizeof(*a));
    array_owned *own = calloc(1, sizeof(*own));
    if (!a || !own) { free(a); free(own); free(validity); free(b1); free(b2); return NULL; }
    own->buffers[0] = validity, own->buffers[1] = b1, own->buffers[2] = b2;
    own->views[0] = validity, own->views[1] = b1, own->views[2] = b2;
    *a = (struct ArrowArray){.length = n, .null_count = nulls, .n_buffers = nbuf, .buffers = own->views,
                             .release = release_array, .private_data = own};
    return a;
}

/* The buffer of a column, moved out of the scanner (which starts it again empty). */
static void *steal(void **v, Py_ssize_t *n, Py_ssize_t *cap) {
    void *out = *v;
    if (!out) out = malloc(8);  /* Arrow wants a data buffer even for no values */
    *v = NULL, *n = 0, *cap = 0;
    return out;
}

static struct ArrowArray *int_column(ibuf *b) {
    int64_t n = b->n;
    return leaf(n, 0, NULL, steal((void **)&b->v, &b->n, &b->cap), NULL, 2);
}

/* Floats, NaN written as null when `nan_is_null` (a phase with no percentage printed). */
static struct ArrowArray *float_column(dbuf *b, int nan_is_null) {
    int64_t n = b->n, nulls = 0;
    uint8_t *valid = NULL;
    if (nan_is_null) {
        for (int64_t i = 0; i < n; i++) nulls += isnan(b->v[i]);
        if (nulls) {
            valid = calloc((size_t)(n + 7) / 8 + 1, 1);
            if (!valid) return NULL;
            for (int64_t i = 0; i < n; i++)
                if (!isnan(b->v[i])) valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
    }
    return leaf(n, nulls, valid, steal((void **)&b->v, &b->n, &b->cap), NULL, 2);
}

/* Strings: the table's entries at each index (or one string for all when idx is NULL), as an
 * Arrow string view array ("vu"), polars' own layout, so it takes it as it is: a 16-byte view a
 * value (the string itself when it fits in 12 bytes, else its first 4 bytes and where it is), and
 * one data buffer holding the table's strings once each. */
static struct ArrowArray *text_column(Scanner *self, ibuf *idx, int64_t n, int one) {
    int64_t size = 0;
    for (int k = 0; k < self->nstr; k++) size += self->str_len[k];
    if (size > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "over 2 GiB of names"); return NULL; }
    uint8_t *views = malloc((size_t)(n ? n : 1) * 16);
    char *chars = malloc((size_t)size + 1);
    int32_t *at = malloc((size_t)self->nstr * sizeof(int32_t) + 1);
    int64_t *sizes = malloc(sizeof(int64_t));
    struct ArrowArray *a = calloc(1, sizeof(*a));
    array_owned *own = calloc(1, sizeof(*own));
    if (!views || !chars || !at || !sizes || !a || !own) {
        free(views); free(chars); free(at); free(sizes); free(a); free(own);
        PyErr_NoMemory();
        return NULL;
    }
    int32_t used = 0;
    for (int k = 0; k < self->nstr; k++) {
        at[k] = used;
        memcpy(chars + used, self->str_text[k], (size_t)self->str_len[k]);
        used += (int32_t)self->str_len[k];
    }
    for (int64_t i = 0; i < n; i++) {
        int k = idx ? (int)idx->v[i] : one;
        int32_t len = (int32_t)self->str_len[k];
        uint8_t *v = views + 16 * i;
        memset(v, 0, 16);
        memcpy(v, &len, 4);
        if (len <= 12) {
            memcpy(v + 4, self->str_text[k], (size_t)len);
        } else {
            int32_t buffer = 0;
            memcpy(v + 4, self->str_text[k], 4);
            memcpy(v + 8, &buffer, 4);
            memcpy(v + 12, &at[k], 4);
        }
    }
    free(at);
    sizes[0] = used;
    if (idx) idx->n = 0;
    /* The buffers: validity (none), views, the one data buffer, the data buffers' sizes. */
    own->buffers[0] = views, own->buffers[1] = chars, own->buffers[2] = sizes;  /* freed on release */
    own->views[0] = NULL, own->views[1] = views, own->views[2] = chars, own->views[3] = sizes;
    a->length = n;
    a->n_buffers = 4;
    a->buffers = own->views;
    a->release = release_array;
    a->private_data = own;
    return a;
}

static const char *PHASE_COLUMNS[] = {"name", "ms", "pct", "window", "line", "source", "process"};
static const char *PHASE_FORMATS[] = {"vu", "g", "g", "l", "l", "vu", "vu"};
static const char *METRIC_COLUMNS[] = {"name", "value", "window", "line", "source", "rank", "process"};
static const char *METRIC_FORMATS[] = {"vu", "g", "l", "l", "vu", "vu", "vu"};

typedef struct {
    PyObject_HEAD
    struct ArrowSchema *schema;
    struct ArrowArray *array;
} Frame;

static void free_schema(struct ArrowSchema *sc) {
    if (sc) { if (sc->release) sc->release(sc); free(sc); }
}

static void free_array(struct ArrowArray *a) {
    if (a) { if (a->release) a->release(a); free(a); }
}

static void Frame_dealloc(Frame *self) {
    free_schema(self->schema);
    free_array(self->array);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void capsule_schema(PyObject *c) { free_schema(PyCapsule_GetPointer(c, "arrow_schema")); }
static void capsule_array(PyObject *c) { free_array(PyCapsule_GetPointer(c, "arrow_array")); }

/* The PyCapsule protocol: the schema and the array, handed over once. */
static PyObject *Frame_arrow(Frame *self, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds)) {
    if (!self->array) { PyErr_SetString(PyExc_RuntimeError, "a Frame is imported once"); return NULL; }
    PyObject *sc = PyCapsule_New(self->schema, "arrow_schema", capsule_schema);
    if (!sc) return NULL;
    self->schema = NULL;
    PyObject *ar = PyCapsule_New(self->array, "arrow_array", capsule_array);
    if (!ar) { Py_DECREF(sc); return NULL; }
    self->array = NULL;
    return Py_BuildValue("NN", sc, ar);
}

static PyMethodDef Frame_methods[] = {
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))Frame_arrow, METH_VARARGS | METH_KEYWORDS,
     "The records as an Arrow struct array (the PyCapsule protocol)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FrameType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ingest.parsers._scan.Frame",
    .tp_basicsize = sizeof(Frame),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Frame_dealloc,
    .tp_methods = Frame_methods,
    .tp_doc = "One kind's records, for pl.Series(frame).struct.unnest().",
};

/* A struct array of `columns` (taken over) with their names and formats. */
static PyObject *frame(int64_t n, struct ArrowArray **columns, const char **names, const char **formats, int k) {
    for (int i = 0; i < k; i++) {
        if (columns[i]) continue;  /* a column failed (its exception set, or out of memory): no Frame made */
        for (int j = 0; j < k; j++) free_array(columns[j]);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    Frame *f = PyObject_New(Frame, &FrameType);
    if (f) f->schema = NULL, f->array = NULL;
    struct ArrowSchema *sc = calloc(1, sizeof(*sc));
    struct ArrowSchema **kids = calloc((size_t)k, sizeof(*kids));
    struct ArrowArray *a = leaf(n, 0, NULL, NULL, NULL, 1);
    int bad = !f || !sc || !kids || !a;
    for (int i = 0; i < k; i++) {
        if (!bad && !(kids[i] = calloc(1, sizeof(**kids)))) bad = 1;
        if (!columns[i]) bad = 1;
    }
    if (bad) {
        for (int i = 0; i < k; i++) { free_array(columns[i]); free(kids ? kids[i] : NULL); }
        free(kids); free(sc); free_array(a); Py_XDECREF(f);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    array_owned *own = a->private_data;
    for (int i = 0; i < k; i++) {
        *kids[i] = (struct ArrowSchema){.format = formats[i], .name = names[i], .flags = ARROW_FLAG_NULLABLE,
                                        .release = release_leaf_schema};
        own->children[i] = columns[i];
    }
    a->children = own->children;
    a->n_children = k;
    *sc = (struct ArrowSchema){.format = "+s", .name = "", .n_children = k, .children = kids,
                               .release = release_schema};
    f->schema = sc;
    f->array = a;
    return (PyObject *)f;
}

/* take() -> (phases, metrics): the records read so far as Frames (None: none of that kind). */
static PyObject *Scanner_take(Scanner *self, PyObject *Py_UNUSED(ignored)) {
    if (not_ready(self)) return NULL;
    int64_t np = self->p_name.n, nm = self->m_name.n;
    PyObject *phases = Py_None, *metrics = Py_None;
    Py_INCREF(Py_None);
    Py_INCREF(Py_None);
    if (np) {
        struct ArrowArray *cols[] = {
            text_column(self, &self->p_name, np, 0), float_column(&self->p_ms, 0), float_column(&self->p_pct, 1),
            int_column(&self->p_window), int_column(&self->p_line), text_column(self, &self->p_source, np, 0),
            text_column(self, &self->p_process, np, 0)};
        Py_DECREF(phases);
        if (!(phases = frame(np, cols, PHASE_COLUMNS, PHASE_FORMATS, 7))) { Py_DECREF(metrics); return NULL; }
    }
    if (nm) {
        struct ArrowArray *cols[] = {
            text_column(self, &self->m_name, nm, 0), float_column(&self->m_value, 0), int_column(&self->m_window),
            int_column(&self->m_line), text_column(self, &self->m_source, nm, 0),
            text_column(self, &self->m_rank, nm, 0), text_column(self, &self->m_process, nm, 0)};
        Py_DECREF(metrics);
        if (!(metrics = frame(nm, cols, METRIC_COLUMNS, METRIC_FORMATS, 7))) { Py_DECREF(phases); return NULL; }
    }
    return Py_BuildValue("NN", phases, metrics);
}

/* ---- handing records over grouped: what a digest keeps (runs/digest.py) --------------------
 *
 * take_groups() gives each kind's records already grouped by (name, source, process, rank), the
 * key a digest folds them by, as the columns it keeps: a group's windows, lines, values, their
 * places among the batch's records of that kind (emission order) and, for phases, percentages
 * (NaN: none printed). A counting sort by group, groups in the order they first appear: what
 * polars' group_by(maintain_order=True) of the frame take() gives, without a string a record. */

typedef struct { int key[4]; Py_ssize_t count, fill; } group_slot;

typedef struct {
    group_slot *groups; int ngroups, capgroups;
    int *table; int tcap;  /* open addressing: group index + 1, 0 empty */
} grouping;

static uint32_t key_hash(const int *k) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 4; i++) h = (h ^ (uint32_t)k[i]) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 29));
}

static int grouping_rehash(grouping *g, int cap) {
    int *t = calloc((size_t)cap, sizeof(int));
    if (!t) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < g->ngroups; i++) {
        uint32_t s = key_hash(g->groups[i].key) & (uint32_t)(cap - 1);
        while (t[s]) s = (s + 1) & (uint32_t)(cap - 1);
        t[s] = i + 1;
    }
    free(g->table);
    g->table = t, g->tcap = cap;
    return 0;
}

/* The group of key k (made when new): its index, -1 on error. */
static int group_of(grouping *g, const int *k) {
    uint32_t s = key_hash(k) & (uint32_t)(g->tcap - 1);
    for (int i; (i = g->table[s]); s = (s + 1) & (uint32_t)(g->tcap - 1))
        if (memeq(g->groups[i - 1].key, k, sizeof(int) * 4)) return i - 1;
    if (g->ngroups == g->capgroups) {
        int cap = g->capgroups ? g->capgroups * 2 : 16;
        group_slot *p = realloc(g->groups, (size_t)cap * sizeof(group_slot));
        if (!p) { PyErr_NoMemory(); return -1; }
        g->groups = p, g->capgroups = cap;
    }
    int i = g->ngroups++;
    memcpy(g->groups[i].key, k, sizeof(int) * 4);
    g->groups[i].count = g->groups[i].fill = 0;
    g->table[s] = i + 1;
    if (g->ngroups * 2 > g->tcap && grouping_rehash(g, g->tcap * 2) < 0) return -1;
    return i;
}

/* 4 bytes a number when every one of the column fits ("i"), else 8 ("q"). */
static int fits_int32(const int64_t *v, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (v[i] < INT32_MIN || v[i] > INT32_MAX) return 0;
    return 1;
}

static PyObject *new_bytes(Py_ssize_t size, char **at) {
    PyObject *b = PyBytes_FromStringAndSize(NULL, size);
    *at = b ? PyBytes_AS_STRING(b) : NULL;
    return b;
}

/* One kind's records as [(name, source, process, rank, windows, lines, values, order, pcts)]:
 * bytes of int32 or int64 (`wide` says which: bit 0 windows, bit 1 lines), float64 values, int32
 * order, float64 pcts (None for metrics). The scanner's buffers are emptied, their room kept. */
static PyObject *groups_of(Scanner *self, int phases, int *wide) {
    Py_ssize_t n = phases ? self->p_name.n : self->m_name.n;
    const int64_t *names = phases ? self->p_name.v : self->m_name.v;
    const int64_t *windows = phases ? self->p_window.v : self->m_window.v;
    const int64_t *lines = phases ? self->p_line.v : self->m_line.v;
    const double *values = phases ? self->p_ms.v : self->m_value.v;
    if (n >= INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "too many records in one batch"); return NULL; }
    grouping g = {0};
    int32_t *gid = malloc((size_t)n * sizeof(int32_t) + 1);
    PyObject *out = NULL;
    if (!gid || grouping_rehash(&g, 64) < 0) { if (!gid) PyErr_NoMemory(); goto done; }
    /* A direct-mapped cache in front of the table: a batch's records cycle through a few groups. */
    struct { int key[4]; int at; } seen[256];
    for (int i = 0; i < 256; i++) seen[i].at = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int k[4] = {(int)names[i], phases ? (int)self->p_source.v[i] : (int)self->m_source.v[i],
                    phases ? (int)self->p_process.v[i] : (int)self->m_process.v[i],
                    phases ? self->s_empty : (int)self->m_rank.v[i]};
        unsigned slot = (unsigned)(k[0] * 31 + k[1] * 7 + k[2] * 3 + k[3]) & 255;
        int at = seen[slot].at;
        /* Compared an int at a time, not by memcmp: k was just stored an int at a time, and a
         * wider load of it stalls on store forwarding (a third of this loop's time). */
        if (at < 0 || seen[slot].key[0] != k[0] || seen[slot].key[1] != k[1] || seen[slot].key[2] != k[2]
            || seen[slot].key[3] != k[3]) {
            if ((at = group_of(&g, k)) < 0) goto done;
            memcpy(seen[slot].key, k, sizeof(k));
            seen[slot].at = at;
        }
        gid[i] = at;
        g.groups[at].count++;
    }
    *wide = (fits_int32(windows, n) ? 0 : 1) | (fits_int32(lines, n) ? 0 : 2);
    Py_ssize_t wsize = *wide & 1 ? 8 : 4, lsize = *wide & 2 ? 8 : 4;
    out = PyList_New(g.ngroups);
    if (!out) goto done;
    char **cols = calloc((size_t)g.ngroups * 5 + 1, sizeof(char *));
    if (!cols) { Py_CLEAR(out); PyErr_NoMemory(); goto done; }
    for (int k = 0; k < g.ngroups; k++) {
        Py_ssize_t c = g.groups[k].count;
        char **at = cols + 5 * k;
        PyObject *w = new_bytes(c * wsize, &at[0]), *l = new_bytes(c * lsize, &at[1]),
                 *v = new_bytes(c * 8, &at[2]), *o = new_bytes(c * 4, &at[3]);
        PyObject *p = phases ? new_bytes(c * 8, &at[4]) : (Py_INCREF(Py_None), Py_None);
        const int *key = g.groups[k].key;
        PyObject *t = (w && l && v && o && p) ? PyTuple_Pack(9, str_obj(self, key[0]), str_obj(self, key[1]),
                                                             str_obj(self, key[2]), str_obj(self, key[3]), w, l, v, o, p)
                                              : NULL;
        Py_XDECREF(w); Py_XDECREF(l); Py_XDECREF(v); Py_XDECREF(o); Py_XDECREF(p);
        if (!t) { Py_CLEAR(out); free(cols); goto done; }
        PyList_SET_ITEM(out, k, t);
    }
    /* Each record's place in its group, then the columns scattered one at a time (a write stream
     * a group at once, not five). */
    int32_t *place = malloc((size_t)n * sizeof(int32_t) + 1);
    if (!place) { Py_CLEAR(out); free(cols); PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) place[i] = (int32_t)g.groups[gid[i]].fill++;
#define SCATTER(c, T, src) \
    for (Py_ssize_t i = 0; i < n; i++) ((T *)cols[5 * gid[i] + (c)])[place[i]] = (T)(src);
    if (wsize == 4) { SCATTER(0, int32_t, windows[i]) } else { SCATTER(0, int64_t, windows[i]) }
    if (lsize == 4) { SCATTER(1, int32_t, lines[i]) } else { SCATTER(1, int64_t, lines[i]) }
    SCATTER(2, double, values[i])
    SCATTER(3, int32_t, i)
    if (phases) { SCATTER(4, double, self->p_pct.v[i]) }
#undef SCATTER
    free(place);
    free(cols);
    if (phases) {
        self->p_name.n = self->p_window.n = self->p_line.n = self->p_ms.n = self->p_pct.n = 0;
        self->p_source.n = self->p_process.n = 0;
    } else {
        self->m_name.n = self->m_window.n = self->m_line.n = self->m_value.n = 0;
        self->m_source.n = self->m_rank.n = self->m_process.n = 0;
    }
done:
    free(gid);
    free(g.groups);
    free(g.table);
    return out;
}

/* take_groups() -> (phases, metrics): each None or (records, wide, groups) (see groups_of). */
static PyObject *Scanner_take_groups(Scanner *self, PyObject *Py_UNUSED(ignored)) {
    if (not_ready(self)) return NULL;
    PyObject *kinds[2] = {Py_None, Py_None};
    Py_ssize_t counts[2] = {self->p_name.n, self->m_name.n};
    for (int k = 0; k < 2; k++) {
        if (!counts[k]) { Py_INCREF(Py_None); continue; }
        int wide = 0;
        PyObject *groups = groups_of(self, k == 0, &wide);
        kinds[k] = groups ? Py_BuildValue("niN", counts[k], wide, groups) : NULL;
        if (!kinds[k]) { if (k) Py_DECREF(kinds[0]); return NULL; }
    }
    return Py_BuildValue("NN", kinds[0], kinds[1]);
}

/* ---- records Python's readers made ----------------------------------------------------------
 *
 * add_records(phases, metrics): records.Phase and records.Metric objects the readers fed in
 * Python made, appended after the scanner's own. Every record, whoever made it, waits in the
 * same columns in emission order: a line Python reads costs no frame of its own (a log Python
 * reads a line each, vLLM's, made one polars frame a line: 63 s and 406 MB for 14 MB). All or
 * nothing: every record is read before the first is added. */

static int str_index(Scanner *self, PyObject *o) {
    if (!PyUnicode_Check(o)) { PyErr_SetString(PyExc_TypeError, "a record's name, source, process and rank are str"); return -1; }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(o, &n);
    return s ? intern_str(self, s, n) : -1;
}

static int number_attr(PyObject *rec, PyObject *name, double *out, int none_is_nan) {
    PyObject *v = PyObject_GetAttr(rec, name);
    if (!v) return -1;
    if (v == Py_None && none_is_nan) { Py_DECREF(v); *out = NAN; return 0; }
    double d = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    *out = d;
    return 0;
}

static int int_attr(PyObject *rec, PyObject *name, int64_t *out) {
    PyObject *v = PyObject_GetAttr(rec, name);
    if (!v) return -1;
    long long x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = x;
    return 0;
}

static int str_attr(Scanner *self, PyObject *rec, PyObject *name, int64_t *out) {
    PyObject *v = PyObject_GetAttr(rec, name);
    if (!v) return -1;
    int k = str_index(self, v);
    Py_DECREF(v);
    if (k < 0) return -1;
    *out = k;
    return 0;
}

typedef struct { int64_t name, window, line, source, process, rank; double value, pct; } record;

static PyObject *Scanner_add_records(Scanner *self, PyObject *args) {
    static PyObject *A[8];  /* name value ms pct window line source process, then rank */
    static PyObject *RANK;
    static const char *names[] = {"name", "value", "ms", "pct", "window", "line", "source", "process"};
    PyObject *phases, *metrics;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &phases, &PyList_Type, &metrics)) return NULL;
    if (not_ready(self)) return NULL;
    if (!RANK) {
        for (int k = 0; k < 8; k++)
            if (!(A[k] = PyUnicode_InternFromString(names[k]))) return NULL;
        if (!(RANK = PyUnicode_InternFromString("rank"))) return NULL;
    }
    Py_ssize_t np = PyList_GET_SIZE(phases), nm = PyList_GET_SIZE(metrics);
    record *rs = malloc((size_t)(np + nm + 1) * sizeof(record));
    if (!rs) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < np + nm; i++) {
        int phase = i < np;
        PyObject *rec = phase ? PyList_GET_ITEM(phases, i) : PyList_GET_ITEM(metrics, i - np);
        record *r = rs + i;
        r->rank = self->s_empty, r->pct = NAN;
        if (str_attr(self, rec, A[0], &r->name) < 0
            || number_attr(rec, phase ? A[2] : A[1], &r->value, 0) < 0
            || (phase && number_attr(rec, A[3], &r->pct, 1) < 0)
            || int_attr(rec, A[4], &r->window) < 0 || int_attr(rec, A[5], &r->line) < 0
            || str_attr(self, rec, A[6], &r->source) < 0 || str_attr(self, rec, A[7], &r->process) < 0
            || (!phase && str_attr(self, rec, RANK, &r->rank) < 0)) {
            free(rs);
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < np + nm; i++) {
        const record *r = rs + i;
        int bad = i < np ? add_phase_of(self, (int)r->name, r->value, r->pct, r->window, r->line, (int)r->source,
                                        (int)r->process)
                         : add_metric(self, (int)r->name, r->value, r->window, r->line, (int)r->source, (int)r->rank,
                                      (int)r->process);
        if (bad < 0) { free(rs); return NULL; }
    }
    free(rs);
    Py_RETURN_NONE;
}

static PyObject *Scanner_pending(Scanner *self, void *Py_UNUSED(closure)) {
    return PyLong_FromSsize_t(self->p_name.n + self->m_name.n + tests_pending(self->tests));
}

static int load_map(Scanner *self, PyObject *dict, keymap **out, int *count) {
    Py_ssize_t pos = 0, n = PyDict_Size(dict);
    PyObject *k, *v;
    *out = calloc((size_t)(n ? n : 1), sizeof(keymap));
    if (!*out) { PyErr_NoMemory(); return -1; }
    *count = 0;
    while (PyDict_Next(dict, &pos, &k, &v)) {
        Py_ssize_t kl, vl;
        const char *ks = PyUnicode_AsUTF8AndSize(k, &kl), *vs = PyUnicode_AsUTF8AndSize(v, &vl);
        if (!ks || !vs) return -1;
        keymap *m = &(*out)[(*count)++];
        m->text = malloc((size_t)kl + 1);
        if (!m->text) { PyErr_NoMemory(); return -1; }
        memcpy(m->text, ks, (size_t)kl + 1);
        m->len = kl;
        m->hash = fnv1a(ks, kl);
        if ((m->metric = intern_str(self, vs, vl)) < 0) return -1;
    }
    return 0;
}

/* A literal searched in every line: a reader's trigger (its bit in the masks), or one of the
 * scanner's own (reader -1: no bit). Its index, -1 on error. */
static int add_literal(Scanner *self, const char *t, Py_ssize_t len, int reader) {
    if (self->nlit == MAX_LITERALS) { PyErr_SetString(PyExc_ValueError, "too many trigger literals"); return -1; }
    int k = self->nlit++;
    self->lit[k] = malloc((size_t)len + 1);
    if (!self->lit[k]) { PyErr_NoMemory(); return -1; }
    memcpy(self->lit[k], t, (size_t)len + 1);
    self->lit_len[k] = len;
    self->lit_reader[k] = reader;
    self->lit_bit[k] = reader < 0 ? 0u : BIT(reader);
    unsigned key = ((unsigned char)t[0] << 8) | (unsigned char)t[1];
    self->bigram[key >> 3] |= (uint8_t)(1u << (key & 7));
    self->by_first[(unsigned char)t[0]] |= 1ull << k;
    if (reader == R_SGLANG && strcmp(t, "Decode batch") == 0) self->lit_decode = k;
    if (reader == R_SGLANG && strcmp(t, "Prefill batch") == 0) self->lit_prefill = k;
    if (reader == R_EAGLE && strcmp(t, "_PROFILE]") == 0) self->lit_profile = k;
    if (len < 3) self->fingerprinted = 0;  /* the vector search reads three bytes of each: the scalar one reads */
    return k;
}

/* line_avx2's buckets, once every literal is added: the literals' distinct first three bytes in
 * order, cut into eight runs, a bucket each. A bucket's nibble tables hold every byte of its
 * literals at each place, so a place matches a bucket's tables where its bytes mix its literals':
 * literals of like prefixes (`NCCL`, `NCCL_`, `Namespace(`) in one bucket add few such mixes, while
 * a bucket a literal in turn took `ServerArgs(` with ` ...` and `---` (a row of spaces and digits,
 * a rule) and checked twice the candidates on real lines. Which literals a place may start is the
 * same whatever the buckets: they only filter (a literal is still compared whole). */
static void fingerprint(Scanner *self) {
    uint32_t prefix[MAX_LITERALS];
    int distinct = 0;
    for (int k = 0; k < self->nlit; k++) {
        if (self->lit_len[k] < 3) continue;
        const unsigned char *t = (const unsigned char *)self->lit[k];
        uint32_t key = (uint32_t)t[0] << 16 | (uint32_t)t[1] << 8 | t[2];
        int at = 0;
        while (at < distinct && prefix[at] < key) at++;
        if (at < distinct && prefix[at] == key) continue;
        memmove(prefix + at + 1, prefix + at, (size_t)(distinct - at) * sizeof(*prefix));
        prefix[at] = key;
        distinct++;
    }
    for (int k = 0; k < self->nlit; k++) {
        if (self->lit_len[k] < 3) continue;
        const unsigned char *t = (const unsigned char *)self->lit[k];
        uint32_t key = (uint32_t)t[0] << 16 | (uint32_t)t[1] << 8 | t[2];
        int rank = 0;
        while (prefix[rank] != key) rank++;
        int bucket = rank * 8 / distinct;
        uint32_t tk = tri_key(self->lit[k]);
        unsigned slot = tri_home(tk);
        while (self->tri[slot].key && self->tri[slot].key != tk) slot = (slot + 1) & 127;
        self->tri[slot].key = tk;
        self->tri[slot].lits |= 1ull << k;
        for (int j = 0; j < 3; j++) {
            self->fp_lo[j][t[j] & 15] |= (uint8_t)(1u << bucket);
            self->fp_hi[j][t[j] >> 4] |= (uint8_t)(1u << bucket);
        }
    }
}

/* Scanner(literals: [(text, reader)], decode_metrics: {key: metric}, prefill_metrics: {...}) */
static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwds) {
    PyObject *literals, *decode, *prefill;
    static char *kw[] = {"literals", "decode_metrics", "prefill_metrics", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!", kw, &PyList_Type, &literals, &PyDict_Type, &decode,
                                     &PyDict_Type, &prefill)) return -1;
    if (self->strings) { PyErr_SetString(PyExc_RuntimeError, "a Scanner is made once"); return -1; }
    self->last_label_len = -1;
    self->strings = PyList_New(0);
    if (!self->strings) return -1;
    Py_ssize_t nl = PyList_GET_SIZE(literals);
    if (nl > MAX_LITERALS) { PyErr_SetString(PyExc_ValueError, "too many trigger literals"); return -1; }
    self->lit_decode = self->lit_prefill = self->lit_profile = -1;
    self->fingerprinted = 1;
    for (Py_ssize_t i = 0; i < nl; i++) {
        PyObject *text;
        int reader;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(literals, i), "Ui", &text, &reader)) return -1;
        Py_ssize_t len;
        const char *t = PyUnicode_AsUTF8AndSize(text, &len);
        if (!t) return -1;
        if (len < 2 || !PyUnicode_IS_ASCII(text) || reader < 0 || reader >= R_COUNT) {
            PyErr_Format(PyExc_ValueError, "trigger literal %R: two ASCII characters at least, a known reader", text);
            return -1;
        }
        if (add_literal(self, t, len, reader) < 0) return -1;
    }
    /* The scanner's own: a phase line holding it is Python's (a summary-table row, maybe). */
    if ((self->lit_tok = add_literal(self, "tok/", 4, -1)) < 0) return -1;
    fingerprint(self);
    if ((self->s_main = intern_str(self, "main", 4)) < 0 || (self->s_eagle = intern_str(self, "eagle_profile", 13)) < 0
        || (self->s_decode_src = intern_str(self, "sglang_decode", 13)) < 0
        || (self->s_prefill_src = intern_str(self, "sglang_prefill", 14)) < 0
        || (self->s_empty = intern_str(self, "", 0)) < 0
        || (self->s_window_cycles = intern_str(self, "window_cycles", 13)) < 0
        || (self->s_cycle_ms = intern_str(self, "cycle_ms", 8)) < 0
        || (self->s_accept_raw = intern_str(self, "accept_len_raw", 14)) < 0
        || (self->s_tokens = intern_str(self, "tokens_per_cycle", 16)) < 0
        || (self->s_throughput = intern_str(self, "throughput_tok_s", 16)) < 0
        || (self->s_graph = intern_str(self, "graph", 5)) < 0) return -1;
    if (load_map(self, decode, &self->decode, &self->ndecode) < 0) return -1;
    if (load_map(self, prefill, &self->prefill, &self->nprefill) < 0) return -1;
    if (!(self->tests = calloc(1, sizeof(*self->tests)))) { PyErr_NoMemory(); return -1; }
    if (!(self->tests_gpu_key = PyUnicode_InternFromString("nccl_tests.gpu"))
        || !(self->tests_hint = PyUnicode_InternFromString("nccl-tests"))
        || !(self->tests_version_key = PyUnicode_InternFromString("nccl_tests.version"))
        || !(self->nccl_version_key = PyUnicode_InternFromString("nccl.version"))
        || !(self->tests_name = PyUnicode_InternFromString("nccl_tests"))) return -1;
    self->ready = 1;
    return 0;
}

/* A Scanner made by __new__ alone (or whose __init__ failed) holds no tables: refused. */
static int not_ready(Scanner *self) {
    if (self->ready) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the Scanner was not initialised");
    return 1;
}

static void Scanner_dealloc(Scanner *self) {
    vllm_release(self);
    for (int i = 0; i < self->nlit; i++) free(self->lit[i]);
    for (int i = 0; i < self->nstr; i++) free(self->str_text[i]);
    free(self->str_text);
    free(self->str_len);
    free(self->str_hash);
    free(self->str_slot);
    for (int i = 0; i < self->ndecode; i++) free(self->decode[i].text);
    for (int i = 0; i < self->nprefill; i++) free(self->prefill[i].text);
    free(self->decode);
    free(self->prefill);
    ibuf *ib[] = {&self->p_name, &self->p_window, &self->p_line, &self->p_source, &self->p_process, &self->m_name, &self->m_window, &self->m_line,
                  &self->m_source, &self->m_rank, &self->m_process};
    for (size_t i = 0; i < sizeof(ib) / sizeof(*ib); i++) free(ib[i]->v);
    free(self->p_ms.v);
    free(self->p_pct.v);
    free(self->m_value.v);
    nccl_forget(self);
    nccl_fast_free(self);
    context_clear(&self->ctx);
    tests_free(self->tests);
    Py_XDECREF(self->tests_gpu_key);
    Py_XDECREF(self->tests_hint);
    Py_XDECREF(self->tests_version_key);
    Py_XDECREF(self->nccl_version_key);
    Py_XDECREF(self->tests_name);
    Py_XDECREF(self->strings);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- reading chunks (text.py) ------------------------------------------------------------- */

/* longest_line(block: bytes) -> the longest line's length in bytes (lines cut at b"\n"). */
#ifdef HAVE_AVX2_PATH
/* The 32 bytes at s as a vector, read from a copy padded with `fill` where fewer than `need` are left
 * (the loads never pass the text's end). */
__attribute__((target("avx2")))
static inline __m256i load_padded(const char *s, Py_ssize_t left, Py_ssize_t need, char fill, char *pad) {
    if (left >= need) return _mm256_loadu_si256((const __m256i *)s);
    Py_ssize_t rest = left > 0 ? left : 0;
    memcpy(pad, s, (size_t)rest);
    memset(pad + rest, fill, 64 - (size_t)rest);
    return _mm256_loadu_si256((const __m256i *)pad);
}

/* longest_line's count, 32 bytes a step: the newlines' places from a compare's bit mask. */
__attribute__((target("avx2")))
static Py_ssize_t longest_avx2(const char *s, Py_ssize_t n) {
    const __m256i nl = _mm256_set1_epi8('\n');
    Py_ssize_t longest = 0, start = 0;
    char pad[64];
    for (Py_ssize_t i = 0; i < n; i += 32) {
        __m256i v = load_padded(s + i, n - i, 32, 0, pad);
        uint32_t m = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, nl));
        for (; m; m &= m - 1) {
            Py_ssize_t at = i + __builtin_ctz(m);
            if (at - start > longest) longest = at - start;
            start = at + 1;
        }
    }
    return n - start > longest ? n - start : longest;
}
#endif

static PyObject *longest_line(PyObject *Py_UNUSED(mod), PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
#ifdef HAVE_AVX2_PATH
    if (avx2_ok) {
        Py_ssize_t longest = longest_avx2(b.buf, b.len);
        PyBuffer_Release(&b);
        return PyLong_FromSsize_t(longest);
    }
#endif
    const char *s = b.buf, *end = s + b.len;
    Py_ssize_t longest = 0;
    while (s <= end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *stop = nl ? nl : end;
        if (stop - s > longest) longest = stop - s;
        if (!nl) break;
        s = nl + 1;
    }
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(longest);
}

static int colour_at(const char *s, Py_ssize_t n, Py_ssize_t i) {  /* \[\d+(?:;\d+)*m at i */
    if (s[i] != '[') return 0;
    Py_ssize_t j = i + 1;
    for (;;) {
        Py_ssize_t d = j;
        while (j < n && is_digit(s[j])) j++;
        if (j == d) return 0;
        if (j < n && s[j] == 'm') return 1;
        if (j < n && s[j] == ';') { j++; continue; }
        return 0;
    }
}

static const char *DIRTY[] = {"\r", "\x1b", "^M", "^[", "#033", "]<std", "across cluster]", "PyProcess"};
static const Py_ssize_t DIRTY_AT[] = {0, 0, 0, 0, 0, 1, 14, 0};  /* the rare byte memchr looks for */

/* The line holding position p: starts[] holds each line's first position, ascending. */
static Py_ssize_t line_of(const Py_ssize_t *starts, Py_ssize_t lines, Py_ssize_t p) {
    Py_ssize_t lo = 0, hi = lines;  /* the last start <= p */
    while (hi - lo > 1) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (starts[mid] <= p) lo = mid; else hi = mid;
    }
    return lo;
}

/* dirty_lines(text: str) -> (its number of lines, the indices of those clean() may change:
 * text._DIRTY, _COLOUR, a leading ">", but for the lines whose one change is the MPI tag that
 * leads them (mpi_tag: the scanner takes it off itself), and the indices of those), or None for a
 * text that is not ASCII (text.py looks for U+FFFD there too). Each literal is searched over the
 * whole text, not line by line: most texts have none. */

/* Whether the `]<std` at p closes an MPI tag that leads its line, as mpi_tag reads one. */
static int mpi_tag_at(const char *text, Py_ssize_t len, Py_ssize_t p) {
    Py_ssize_t b = p - 1;
    while (b >= 0 && p - b <= 14 && (is_digit(text[b]) || text[b] == ',')) b--;  /* `[` + 13 at most */
    if (b < 0 || text[b] != '[' || (b > 0 && text[b - 1] != '\n')) return 0;
    const char *nl = memchr(text + p, '\n', (size_t)(len - p));
    int64_t job, rank;
    Py_ssize_t k = mpi_tag(text + b, (nl ? nl - text : len) - b, &job, &rank);
    return k && b + k - 10 == p;
}
#ifdef HAVE_AVX2_PATH
/* Which of DIRTY starts at p, or a colour at p (dirty_lines' literals, read one place at a time). */
/* (DIRTY's literals by their first byte: the two lists change together.) */
static int dirty_at(const char *text, Py_ssize_t len, Py_ssize_t p) {
    const char *t = text + p;
    Py_ssize_t left = len - p;
    switch (*t) {
    case '\r': case 0x1b: return 1;
    case '^': return left >= 2 && (t[1] == 'M' || t[1] == '[');
    case '#': return left >= 4 && memeq(t, "#033", 4);
    case ']': return left >= 5 && memeq(t, "]<std", 5);
    case 'a': return left >= 15 && memeq(t, "across cluster]", 15);
    case 'P': return left >= 9 && memeq(t, "PyProcess", 9);
    case '[': return colour_at(t, left, 0);
    default: return 0;
    }
}

/* The byte pairs where a line may need cleaning, a bit each: a literal's first byte (or one of two) and
 * the bytes that may follow it (NULL: any). Looked up by nibble (dirty_avx2): a bit's table holds
 * every byte whose two nibbles are those of listed bytes, a few more than listed (\v, ^K), which
 * dirty_at turns down. */
static const char *const DIRTY_PAIRS[8][2] = {
    {"\r\x1b", NULL}, {"^", "M["}, {"#", "0"}, {"]", "<"}, {"a", "c"}, {"P", "y"}, {"[", "0123456789"}, {"\n", ">"},
};
static uint8_t dirty_nibbles[4][32];  /* a first byte's low and high nibble, the next one's: each table twice */

static void dirty_nibbles_init(void) {
    for (int bit = 0; bit < 8; bit++) {
        for (int k = 0; k < 2; k++) {
            const char *bytes = DIRTY_PAIRS[bit][k];
            for (int x = 0; x < 256; x++) {
                if (bytes && !memchr(bytes, x, strlen(bytes))) continue;
                for (int half = 0; half < 32; half += 16) {
                    dirty_nibbles[2 * k][half + (x & 15)] |= (uint8_t)(1u << bit);
                    dirty_nibbles[2 * k + 1][half + (x >> 4)] |= (uint8_t)(1u << bit);
                }
            }
        }
    }
}

/* dirty_lines' answer in one pass of 32 bytes a step: lines counted from the newlines' bit masks,
 * and the places where a line may need cleaning found by each byte and the next (DIRTY_PAIRS: a
 * table lookup a nibble), each then read whole. */
__attribute__((target("avx2")))
static int dirty_avx2(const char *text, Py_ssize_t len, Py_ssize_t *lines_out, PyObject *out, Py_ssize_t last,
                      PyObject *mpi) {
    Py_ssize_t last_mpi = -1;  /* the line last found an MPI tag, while it is the last of `mpi` */
    char pad0[64], pad1[64];
    Py_ssize_t line = 0;
    const __m256i low = _mm256_set1_epi8(0x0f), nl = _mm256_set1_epi8('\n'), zero = _mm256_setzero_si256();
    const __m256i lo0 = _mm256_loadu_si256((const __m256i *)dirty_nibbles[0]);
    const __m256i hi0 = _mm256_loadu_si256((const __m256i *)dirty_nibbles[1]);
    const __m256i lo1 = _mm256_loadu_si256((const __m256i *)dirty_nibbles[2]);
    const __m256i hi1 = _mm256_loadu_si256((const __m256i *)dirty_nibbles[3]);
#define NIBBLES(v, lo, hi) _mm256_and_si256(_mm256_shuffle_epi8((lo), _mm256_and_si256((v), low)), \
                                            _mm256_shuffle_epi8((hi), _mm256_and_si256(_mm256_srli_epi16((v), 4), low)))
    for (Py_ssize_t i = 0; i < len; i += 32) {
        __m256i v0 = load_padded(text + i, len - i, 32, 0, pad0);
        __m256i v1 = load_padded(text + i + 1, len - i - 1, 32, 0, pad1);
        uint32_t newlines = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, nl));
        __m256i pairs = _mm256_and_si256(NIBBLES(v0, lo0, hi0), NIBBLES(v1, lo1, hi1));
        uint32_t found = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(pairs, zero));
        if (len - i < 32) found &= (1u << (len - i)) - 1, newlines &= (1u << (len - i)) - 1;
        for (; found; found &= found - 1) {
            int b = __builtin_ctz(found);
            Py_ssize_t p = i + b, at = line + __builtin_popcount(newlines & ((1u << b) - 1));
            if (text[p] == '\n') {
                if (p + 1 < len && text[p + 1] == '>') at++;  /* a markdown quote: the next line */
                else continue;
            } else if (!dirty_at(text, len, p)) {
                continue;
            } else if (text[p] == ']' && at != last && mpi_tag_at(text, len, p)) {
                PyObject *v = PyLong_FromSsize_t(at);
                if (!v || PyList_Append(mpi, v) < 0) { Py_XDECREF(v); return -1; }
                Py_DECREF(v);
                last_mpi = at;
                continue;
            }
            if (at == last_mpi) {  /* more to clean on the line than its tag: a dirty line, no more an MPI one */
                if (PyList_SetSlice(mpi, PyList_GET_SIZE(mpi) - 1, PyList_GET_SIZE(mpi), NULL) < 0) return -1;
                last_mpi = -1;
            }
            if (at != last) {
                PyObject *v = PyLong_FromSsize_t(at);
                if (!v || PyList_Append(out, v) < 0) { Py_XDECREF(v); return -1; }
                Py_DECREF(v);
                last = at;
            }
        }
        line += __builtin_popcount(newlines);
    }
#undef NIBBLES
    *lines_out = line + 1;
    return 0;
}
#endif

static PyObject *dirty_lines(PyObject *Py_UNUSED(mod), PyObject *arg) {
    if (!PyUnicode_Check(arg)) { PyErr_SetString(PyExc_TypeError, "a str"); return NULL; }
    if (!PyUnicode_IS_ASCII(arg)) Py_RETURN_NONE;
    const char *text = (const char *)PyUnicode_1BYTE_DATA(arg);
    Py_ssize_t len = PyUnicode_GET_LENGTH(arg), lines = 1;
#ifdef HAVE_AVX2_PATH
    if (avx2_ok) {
        PyObject *out = PyList_New(0), *mpi = PyList_New(0);
        if (out && mpi && len && text[0] == '>') {  /* a quote on the first line */
            PyObject *zero = PyLong_FromLong(0);
            if (!zero || PyList_Append(out, zero) < 0) Py_CLEAR(out);
            Py_XDECREF(zero);
        }
        if (!out || !mpi || dirty_avx2(text, len, &lines, out, PyList_GET_SIZE(out) - 1, mpi) < 0) {
            Py_XDECREF(out);
            Py_XDECREF(mpi);
            return NULL;
        }
        return Py_BuildValue("nNN", lines, out, mpi);
    }
#endif
    for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + len - p))); p++) lines++;
    Py_ssize_t *starts = malloc((size_t)lines * sizeof(Py_ssize_t));
    char *dirty = calloc((size_t)lines, 1);
    if (!starts || !dirty) { free(starts); free(dirty); return PyErr_NoMemory(); }
    starts[0] = 0;
    Py_ssize_t k = 1;
    for (const char *p = text; (p = memchr(p, '\n', (size_t)(text + len - p))); p++) {
        starts[k++] = p - text + 1;
        if (p + 1 < text + len && p[1] == '>') dirty[k - 1] = 1;  /* a markdown quote */
    }
    if (len && text[0] == '>') dirty[0] = 1;
    for (size_t d = 0; d < sizeof(DIRTY) / sizeof(*DIRTY); d++) {
        Py_ssize_t m = (Py_ssize_t)strlen(DIRTY[d]);
        for (const char *p = text; (p = find_at(p, text + len - p, DIRTY[d], m, DIRTY_AT[d])); p++)
            dirty[line_of(starts, lines, p - text)] |= *p == ']' && mpi_tag_at(text, len, p - text) ? 2 : 1;
    }
    for (const char *p = text; (p = memchr(p, '[', (size_t)(text + len - p))); p++)
        if (colour_at(p, text + len - p, 0)) dirty[line_of(starts, lines, p - text)] |= 1;
    /* 1: a line to clean; 2 alone: one whose MPI tag is all there is to take off */
    PyObject *out = PyList_New(0), *mpi = PyList_New(0);
    for (Py_ssize_t i = 0; out && mpi && i < lines; i++) {
        if (!dirty[i]) continue;
        PyObject *v = PyLong_FromSsize_t(i);
        if (!v || PyList_Append(dirty[i] & 1 ? out : mpi, v) < 0) Py_CLEAR(out);
        Py_XDECREF(v);
    }
    free(starts);
    free(dirty);
    if (!out || !mpi) {
        Py_XDECREF(out);
        Py_XDECREF(mpi);
        return NULL;
    }
    return Py_BuildValue("nNN", lines, out, mpi);
}

/* utf8_image(block: bytes-like, share: float) -> (image, lines, wide) or None: text.Text's parts made
 * from a chunk's UTF-8 bytes in one pass, for text._decode_block, no str of the whole decoded text
 * made (a few non-ASCII characters make a chunk's str UCS-2, twice its bytes, decoded a character at a time).
 * `image` is the ASCII image of what str(block, "utf-8", errors="replace") decodes: each character
 * past U+007F a "?" (so every line starts where it does in the decoded text), a U+FFFD of a broken
 * sequence too; `wide` maps each line holding such a character to that line decoded (as the whole
 * would decode it: a newline never belongs to a UTF-8 sequence, so lines decode alone). None where
 * more than `share` of the lines are wide (the caller decodes and cuts such a chunk into lines). */

/* The bytes of one character of s[0:n) (n >= 1, s[0] past 0x7f) as CPython's UTF-8 decoder takes them:
 * a valid sequence, or the maximal part of one that begins it (a lead byte and the continuation bytes
 * it allows), which errors="replace" makes one U+FFFD. Never a newline: it is no continuation byte. */
static Py_ssize_t utf8_char(const unsigned char *s, Py_ssize_t n) {
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    Py_ssize_t need;
    if (c < 0xc2 || c > 0xf4) return 1;  /* a continuation byte, an overlong lead, or past U+10FFFF */
    if (c < 0xe0) {
        need = 1;
    } else if (c < 0xf0) {
        need = 2;
        if (c == 0xe0) lo = 0xa0;       /* (overlong) */
        else if (c == 0xed) hi = 0x9f;  /* (a surrogate) */
    } else {
        need = 3;
        if (c == 0xf0) lo = 0x90;       /* (overlong) */
        else if (c == 0xf4) hi = 0x8f;  /* (past U+10FFFF) */
    }
    Py_ssize_t k = 1;
    for (; k <= need; k++) {
        if (k >= n || s[k] < lo || s[k] > hi) return k;
        lo = 0x80, hi = 0xbf;
    }
    return k;
}

typedef struct {
    const unsigned char *s;
    Py_ssize_t n, i;       /* the bytes, the first not read */
    Py_UCS1 *image;
    Py_ssize_t j;          /* the image's characters written */
    Py_ssize_t line;       /* the line s[i] is on */
    Py_ssize_t floor;      /* no line of the bytes still to read starts before this */
    Py_ssize_t lines;      /* the bytes' lines, -1 until counted (utf8_wide_line) */
    double share;
    Py_ssize_t *wide;      /* (line, first byte, end) of each wide line */
    Py_ssize_t nwide, cap;
} Utf8Walk;

static Py_ssize_t count_newlines(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t count = 0;
    for (const unsigned char *p = s, *end = s + n; (p = memchr(p, '\n', (size_t)(end - p))); p++) count++;
    return count;
}

/* The rest of the line from s[i] (a byte past 0x7f) into the image, one "?" a character, the line kept
 * as wide: 0, 1 where more than `share` of the lines are wide (no more to read), -1 on an error. */
static int utf8_wide_line(Utf8Walk *w) {
    const unsigned char *s = w->s;
    Py_ssize_t start = w->i, i = w->i, j = w->j;
    while (start > w->floor && s[start - 1] != '\n') start--;  /* (ASCII bytes: the line's first wide one is at i) */
    while (i < w->n && s[i] != '\n') {
        if (s[i] < 0x80) {
            w->image[j++] = s[i++];
        } else {
            w->image[j++] = '?';
            i += utf8_char(s + i, w->n - i);
        }
    }
    if (w->nwide == w->cap) {
        Py_ssize_t cap = w->cap ? 2 * w->cap : 64;
        Py_ssize_t *more = PyMem_Realloc(w->wide, (size_t)cap * 3 * sizeof(Py_ssize_t));
        if (!more) { PyErr_NoMemory(); return -1; }
        w->wide = more, w->cap = cap;
    }
    Py_ssize_t *at = w->wide + 3 * w->nwide++;
    at[0] = w->line, at[1] = start, at[2] = i;
    w->i = w->floor = i, w->j = j;
    /* Over the share of the lines read so far: the whole text's lines counted (once) to know. */
    if ((double)w->nwide > w->share * (double)(w->line + 1)) {
        if (w->lines < 0) w->lines = w->line + 1 + count_newlines(s + i, w->n - i);
        if ((double)w->nwide > w->share * (double)w->lines) return 1;
    }
    return 0;
}

/* The image of s[i:n) a byte at a time (what is left after the vector path, or all of it). */
static int utf8_image_bytes(Utf8Walk *w) {
    while (w->i < w->n) {
        unsigned char c = w->s[w->i];
        if (c >= 0x80) {
            int r = utf8_wide_line(w);
            if (r) return r;
            continue;
        }
        w->image[w->j++] = c;
        w->i++;
        w->line += c == '\n';
    }
    return 0;
}

#ifdef HAVE_AVX2_PATH
/* utf8_image_bytes 32 bytes a step: a step of ASCII bytes only (nearly all of a log) is copied and its
 * newlines counted at once; from a step's first byte past 0x7f, that line goes a byte at a time (the
 * same answers: tests hold both). The stores stay inside the image: it has a character a byte, j <= i. */
__attribute__((target("avx2")))
static int utf8_image_avx2(Utf8Walk *w) {
    const __m256i nl = _mm256_set1_epi8('\n');
    const unsigned char *s = w->s;
    Py_UCS1 *image = w->image;
    Py_ssize_t i = w->i, j = w->j, line = w->line, n = w->n;  /* (locals: the stores alias none of them) */
    while (i + 32 <= n) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(s + i));
        uint32_t high = (uint32_t)_mm256_movemask_epi8(v);
        uint32_t newlines = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, nl));
        _mm256_storeu_si256((__m256i *)(image + j), v);
        if (!high) {
            line += __builtin_popcount(newlines);
            i += 32, j += 32;
            continue;
        }
        int k = __builtin_ctz(high);  /* the bytes before it are the image's */
        w->line = line + __builtin_popcount(newlines & ((1u << k) - 1));
        w->i = i + k, w->j = j + k;
        int r = utf8_wide_line(w);
        if (r) return r;
        i = w->i, j = w->j, line = w->line;
    }
    w->i = i, w->j = j, w->line = line;
    return utf8_image_bytes(w);
}
#endif

static PyObject *utf8_image(PyObject *Py_UNUSED(mod), PyObject *args) {
    Py_buffer b;
    double share;
    if (!PyArg_ParseTuple(args, "y*d", &b, &share)) return NULL;
    if (!(share >= 0.0)) {  /* (NaN too) */
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "share is a number from 0");
        return NULL;
    }
    PyObject *image = PyUnicode_New(b.len, 127), *wide = NULL, *out = NULL;
    Utf8Walk w = {.s = b.buf, .n = b.len, .lines = -1, .share = share};
    int r = -1;
    if (image) {
        w.image = PyUnicode_1BYTE_DATA(image);
#ifdef HAVE_AVX2_PATH
        r = avx2_ok ? utf8_image_avx2(&w) : utf8_image_bytes(&w);
#else
        r = utf8_image_bytes(&w);
#endif
    }
    if (r == 0 && (double)w.nwide > share * (double)(w.line + 1)) r = 1;
    if (r == 0 && w.j < b.len && PyUnicode_Resize(&image, w.j) < 0) r = -1;
    if (r == 0 && (wide = PyDict_New()) == NULL) r = -1;
    for (Py_ssize_t k = 0; r == 0 && k < w.nwide; k++) {
        const Py_ssize_t *at = w.wide + 3 * k;
        PyObject *key = PyLong_FromSsize_t(at[0]);
        PyObject *line = key ? PyUnicode_DecodeUTF8((const char *)w.s + at[1], at[2] - at[1], "replace") : NULL;
        if (!line || PyDict_SetItem(wide, key, line) < 0) r = -1;
        Py_XDECREF(key);
        Py_XDECREF(line);
    }
    if (r == 0) out = Py_BuildValue("OnO", image, w.line + 1, wide);
    else if (r == 1) out = Py_NewRef(Py_None);
    PyMem_Free(w.wide);
    Py_XDECREF(image);
    Py_XDECREF(wide);
    PyBuffer_Release(&b);
    return out;
}

/* find(line, literal) -> where find() finds an ASCII literal in an ASCII line, -1 for nowhere (the vector
 * search where it is on: tests hold both to str.find). */
static PyObject *find_text(PyObject *Py_UNUSED(mod), PyObject *args) {
    PyObject *line, *literal;
    if (!PyArg_ParseTuple(args, "UU", &line, &literal)) return NULL;
    if (!PyUnicode_IS_ASCII(line) || !PyUnicode_IS_ASCII(literal) || PyUnicode_GET_LENGTH(literal) == 0) {
        PyErr_SetString(PyExc_ValueError, "find reads an ASCII line and a literal of one byte or more");
        return NULL;
    }
    const char *s = (const char *)PyUnicode_1BYTE_DATA(line);
    const char *at = find(s, PyUnicode_GET_LENGTH(line), (const char *)PyUnicode_1BYTE_DATA(literal),
                          PyUnicode_GET_LENGTH(literal));
    return PyLong_FromSsize_t(at ? at - s : -1);
}

/* tests_marks(line) -> the TM_ marks (_scan_tests.h) of an ASCII line, as the scan finds them (the
 * vector search where it is on: tests hold both to the words' own search). */
static PyObject *tests_marks_text(PyObject *Py_UNUSED(mod), PyObject *line) {
    if (!PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line)) {
        PyErr_SetString(PyExc_ValueError, "tests_marks reads an ASCII line");
        return NULL;
    }
    return PyLong_FromUnsignedLong(tests_marks((const char *)PyUnicode_1BYTE_DATA(line), PyUnicode_GET_LENGTH(line)));
}

/* vector(on=None) -> whether scan_text searches lines with AVX2 (tests turn it off and on; on is
 * refused where the CPU or the build has no AVX2). */
static PyObject *vector(PyObject *Py_UNUSED(mod), PyObject *args) {
    PyObject *on = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &on)) return NULL;
    if (on != Py_None) {
        int want = PyObject_IsTrue(on);
        if (want < 0) return NULL;
#ifdef HAVE_AVX2_PATH
        avx2_ok = want && __builtin_cpu_supports("avx2");
#endif
    }
    return PyBool_FromLong(avx2_ok);
}

/* hold_heap() -> whether glibc now keeps freed memory of a parse for its next chunks. A parse
 * allocates and frees buffers of a few MB a chunk (text, records, columns); by default glibc maps
 * each afresh and hands it back, and the kernel zeroes every page again (about 200 page faults
 * per MB of log). Blocks under 16 MB come from the heap instead, and up to 32 MB of free heap
 * stays: a few MB more peak memory for a fifth of the faults. */
static PyObject *hold_heap(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(ignored)) {
#ifdef __GLIBC__
    if (mallopt(M_MMAP_THRESHOLD, 16 << 20) && mallopt(M_TRIM_THRESHOLD, 32 << 20)) Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

/* trim_heap() -> whether glibc gave the memory it holds free back to the system (malloc_trim). */
static PyObject *trim_heap(PyObject *Py_UNUSED(mod), PyObject *Py_UNUSED(ignored)) {
#ifdef __GLIBC__
    malloc_trim(0);
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *py_round6(PyObject *module, PyObject *arg) {
    (void)module;
    double x = PyFloat_AsDouble(arg);
    if (x == -1.0 && PyErr_Occurred()) return NULL;
    return PyFloat_FromDouble(round6(x));
}

static PyMethodDef module_methods[] = {
    {"trim_heap", trim_heap, METH_NOARGS, "trim_heap() -> whether free memory went back to the system (glibc)"},
    {"hold_heap", hold_heap, METH_NOARGS, "hold_heap() -> whether freed memory is kept for the next chunks (glibc)"},
    {"vector", vector, METH_VARARGS, "vector(on=None) -> whether scan_text searches lines with AVX2"},
    {"longest_line", longest_line, METH_O, "longest_line(block: bytes) -> the longest line's length"},
    {"offer_words", context_offer_words, METH_O, "offer_words(line) -> (context.WORDS found, _skipped) for an ASCII line"},
    {"tests_marks", tests_marks_text, METH_O, "tests_marks(line) -> the marks _scan_tests.h finds in an ASCII line"},
    {"find", find_text, METH_VARARGS, "find(line, literal) -> where the scanner finds literal in line, or -1"},
    {"hints", context_hints, METH_O, "hints(line) -> whether an ASCII line holds a word of context._HINTS, case-blind"},
    {"utf8_image", utf8_image, METH_VARARGS,
     "utf8_image(block, share) -> (the decoded text's ASCII image, its lines, {line: decoded} of its non-ASCII "
     "lines), None where over `share` of the lines are non-ASCII"},
    {"round6", py_round6, METH_O, "round6(x: float) -> round(x, 6) as the scanner computes it (for tests)"},
    {"dirty_lines", dirty_lines, METH_O,
     "dirty_lines(text: str) -> (lines, the lines clean() may change), None when not ASCII"},
    {"clean_line", scan_clean_line, METH_O,
     "clean_line(line: str) -> text.clean(line) as the scanner cleans it, or None where it calls clean() (for tests)"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS,
     "scan(lines, start, first, eagle, sglang, labels, nccl_lines, channel_lines, flags) -> (stop, mask)"},
    {"scan_text", (PyCFunction)Scanner_scan_text, METH_VARARGS,
     "scan_text(text, pos, index, count, first, eagle, sglang, labels, nccl_lines, channel_lines, flags, stop_at"
     "[, raw, dirty, d, clean]) -> (index, pos, end, mask)"},
    {"nccl_bind", (PyCFunction)Scanner_nccl_bind, METH_VARARGS,
     "nccl_bind(result, nccl_debug_parser, tag_repeats, channel_repeats, record, source[, slots]): read NCCL INFO"
     " lines of known processes"},
    {"env_bind", (PyCFunction)Scanner_env_bind, METH_VARARGS,
     "env_bind(tagger, watcher, max_candidates, (launcher, worker), main, launch_env_name[, resolve_flag]): env"
     " dumps, launch commands (_scan_env.h)"},
    {"mask", (PyCFunction)Scanner_mask, METH_O, "mask(line) -> the bits of the readers it concerns"},
    {"masks", (PyCFunction)Scanner_masks, METH_O, "masks(text) -> mask() of each of its lines, as scan_text reads them"},
    {"bench_readers", (PyCFunction)Scanner_bench_readers, METH_VARARGS,
     "bench_readers(sglang_reader, vllm_reader, Row, keys) or bench_readers(None): whose blocks a title opens"},
    {"vllm_arm", (PyCFunction)Scanner_vllm_arm, METH_VARARGS,
     "vllm_arm(parser, launch_lines, processes, engine_fields, spec_keys, launchers, workers, (launcher, worker),"
     " offer)"},
    {"vllm_args_arm", (PyCFunction)Scanner_vllm_args_arm, METH_VARARGS,
     "vllm_args_arm(fields): vllm._ARGS' field -> setting names, for the `non-default args` lines read"},
    {"llamacpp_arm", (PyCFunction)Scanner_llamacpp_arm, METH_VARARGS,
     "llamacpp_arm(parser): the llama.cpp parser whose timing and slot lines the scanner reads"},
    {"bench_emit", (PyCFunction)Scanner_bench_emit, METH_VARARGS,
     "bench_emit(sglang_parser, vllm_parser, result, recent, Setting, add_block, blocks_key, omitted_key, kept, "
     "bench_tag, recent_max) or bench_emit(None): what a block closed in the scanner writes its records with"},
    {"bench", (PyCFunction)Scanner_bench, METH_VARARGS,
     "bench(rows, sections, rows, sections, Row, keys) or bench(None): the open bench blocks (_scan_vllm.h)"},
    {"take", (PyCFunction)Scanner_take, METH_NOARGS, "take() -> (phases, metrics) as Frames or None"},
    {"watch_tests", (PyCFunction)Scanner_watch_tests, METH_VARARGS,
     "watch_tests(parser, result, words): the nccl_tests reader whose table rows the scan reads"},
    {"take_collectives", (PyCFunction)Scanner_take_collectives, METH_NOARGS,
     "take_collectives() -> the collectives read so far as a Frame, or None"},
    {"add_collectives", (PyCFunction)Scanner_add_collectives, METH_O,
     "add_collectives(collectives): records.Collective objects, after the scanner's own"},
    {"add_records", (PyCFunction)Scanner_add_records, METH_VARARGS,
     "add_records(phases, metrics): records.Phase and records.Metric objects, after the scanner's own"},
    {"take_groups", (PyCFunction)Scanner_take_groups, METH_NOARGS,
     "take_groups() -> (phases, metrics), each None or (records, wide, [(name, source, process, rank, windows,"
     " lines, values, order, pcts)])"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Scanner_getset[] = {
    {"pending", (getter)Scanner_pending, NULL, "records held", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ingest.parsers._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
    .tp_doc = "The native line scanner (see the top of _scan.c).",
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_scan", .m_doc = "The parse engine's native line scanner.", .m_size = -1, .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&ScannerType) < 0 || PyType_Ready(&FrameType) < 0) return NULL;
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    avx2_ok = __builtin_cpu_supports("avx2");
    dirty_nibbles_init();
#endif
    context_hint_init();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
