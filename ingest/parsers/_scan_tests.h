/* nccl-tests lines read in C (#included by _scan.c): what nccl_tests.Parser.feed does with a
 * table's data rows and with the comment lines it ignores, pushed into the scanner's collective
 * columns (records.Collective's fields) as SGLang batch lines push metrics.
 *
 *            8             2     float     sum      -1    15.78    0.00    0.00       0    13.87 ...
 *   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)  ...
 *
 * The parser's state is read at each scan's start (tests_in). A row is read only where reading it
 * changes nothing but the records (a table is open and its op named, no row held for a late name,
 * no footer just read, no wrong count to warn about first, no Python-made collective pending,
 * which native.py moves in first), and every cell is one this file reads exactly: an integer of
 * at most MAX_INT_DIGITS characters, a plain decimal, `N/A`, or one of the type and op names the
 * parser knows (`float`, `sum`, ...). Anything else (a huge or odd number, `inf`, a word the
 * context watcher could take for a format's) goes back to Python. The column layout is the
 * table's own (Table.lead and Table.sides, read from the parser's Table object and kept while it
 * is the same object).
 *
 * A few comment lines move the parser on, as _comment would, by setting its attributes here and
 * reading its state again (tests_in): a `Collective test` line (op_started), a table header that
 * the parser has made a Table of before (Parser.headers: a file prints the same headers test after
 * test), and the footers `# Out of bounds values : 0 OK` and `# Avg bus bandwidth : 68.7` (their
 * metric, the test ended, no table). A footer that warns (a count of wrong values, FAILED) and a
 * value that is not a plain decimal are Python's. */

/* The Arrow helpers of _scan.c, defined after the scan (take_collectives uses them). */
struct ArrowArray;
static struct ArrowArray *leaf(int64_t n, int64_t nulls, void *validity, void *b1, void *b2, int nbuf);
static void *steal(void **v, Py_ssize_t *n, Py_ssize_t *cap);
static struct ArrowArray *int_column(ibuf *b);
static struct ArrowArray *float_column(dbuf *b, int nan_is_null);
static struct ArrowArray *text_column(Scanner *self, ibuf *idx, int64_t n, int one);
static PyObject *frame(int64_t n, struct ArrowArray **columns, const char **names, const char **formats, int k);
static int str_index(Scanner *self, PyObject *o);

#define TESTS_MAX_TOKENS 64
#define TESTS_MAX_SIDES 4
#define TESTS_MAX_WORDS 64
#define TESTS_INT_DIGITS 18  /* records.MAX_INT_DIGITS: a longer cell goes through float() in Python */
#define TESTS_LAYOUTS 8  /* Tables whose layout is kept: a file's tests alternate between a few headers */
#define TESTS_FIELD_LINES 8  /* run settings lines known to set nothing new (tests_run_fields): one a run */
#define TESTS_FIELD_LINE_MAX 256
#define TESTS_NAME_KEPT 32  /* a type or op name kept for the next row (tests_name): longer ones are looked up */
#define TESTS_HEADERS 8  /* header lines whose Table is kept (tests_header_of): a file prints a few */
#define TESTS_HEADER_MAX 256  /* a longer header line is looked up in the dict each time */
#define TESTS_IDLE 128  /* `#` lines kept as changing nothing this scan (tests_idle_comment): past them, read each time */
#define TESTS_IDLE_MAX 192  /* a longer one is read each time */
#define TESTS_PIDS 64  /* slots of the pids whose device rows change nothing this scan (3/4 used at most) */

/* Where a Table's values sit (Table.lead and Table.sides); -1: no such column. */
typedef struct {
    int lead_size, lead_count, lead_type, lead_redop, lead_root;
    int nsides, side_time[TESTS_MAX_SIDES], side_algbw[TESTS_MAX_SIDES], side_busbw[TESTS_MAX_SIDES],
        side_wrong[TESTS_MAX_SIDES];
    int layout_ok;
} TestsLayout;

typedef struct tests_state {
    PyObject *parser, *result;  /* nccl_tests.Parser and its ParseResult (watch_tests) */
    PyObject *table;  /* the Table whose layout is `lay` (a strong reference) */
    TestsLayout lay;
    /* Layouts read before (tests_layout) and their Tables (strong references: an address is
     * never another Table's meanwhile), the next slot to fill. */
    TestsLayout layouts[TESTS_LAYOUTS];
    PyObject *layout_table[TESTS_LAYOUTS];
    int next_layout;
    /* the pids whose device rows were read here this scan (tests_device), device_pids of them, by
     * the digits as written (`Pid 077` is another process than `Pid 77`: the tag is the text) in a
     * hash table (tests_pid_slot) whose slots stamped device_stamp are this scan's */
    char device_pid[TESTS_PIDS][TESTS_INT_DIGITS];
    Py_ssize_t device_pid_len[TESTS_PIDS];
    unsigned device_slot_stamp[TESTS_PIDS], device_stamp;
    int device_pids;
    /* `#` lines read this scan that changed nothing (a device row of a known process, a title,
     * units or version line, `#`: tests_idle_comment), by their text, in slots stamped
     * device_stamp: what they depend on (the reader's ranks and settings, the Tagger's processes as
     * tests_device reads them, the flags tests_in reads) stays as it is till Python runs. A file
     * prints them test after test, the device rows one a rank. */
    char idle_text[TESTS_IDLE][TESTS_IDLE_MAX];  /* idle_used of them this scan */
    int idle_used;
    struct { unsigned stamp; uint32_t hash; int len, at; } idle_slot[2 * TESTS_IDLE];  /* (at most half full) */
    /* Run settings lines whose every setting the result's `settings` (field_settings, a strong
     * reference) held: a setting is never taken away, so such a line sets nothing there again. */
    PyObject *field_settings;
    char field_line[TESTS_FIELD_LINES][TESTS_FIELD_LINE_MAX];
    Py_ssize_t field_len[TESTS_FIELD_LINES];
    int next_field;
    /* what this scan may read (tests_in) */
    int rows_ok, comments_ok, wrong_warned, op;
    long long ranks;  /* the parser's ranks[0] (-1: None) */
    int gpu_set;  /* the setting nccl_tests.gpu is there (a device row's set() changes nothing) */
    int format_set;  /* "nccl_tests" is among the result's formats */
    int versions_set;  /* the format and nccl_tests.version and nccl.version are there (a version line's) */
    int op_known;  /* the table being read has its op: a `concluded` line renames none of its rows */
    long long test;  /* the parser's test number (the window of a footer's metric) */
    int ended;  /* its test_ended: a footer was read, the next table opens test + 1 */
    int seen_header;  /* its seen_header (never set back: a footer read here leaves it) */
    Py_ssize_t pending;  /* the result's collectives (Python's rows) at the scan's start */
    PyObject *headers;  /* its headers dict (header line -> Table or None), a strong reference */
    /* Header lines found in that dict (header_dict, a strong reference) and their values (strong
     * references): the dict only gains keys, and a key's value is never changed (_comment), so a
     * line found there stays found while the dict is the same object. */
    PyObject *header_dict, *header_value[TESTS_HEADERS];
    char header_text[TESTS_HEADERS][TESTS_HEADER_MAX];
    Py_ssize_t header_len[TESTS_HEADERS];
    int next_header;
    int s_oob, s_avg, s_source;  /* "out_of_bounds_values", "avg_busbw_gbs", "nccl_tests" (interned) */
    /* Where a digit-led line that is no row changes nothing (tests_idle): 0 no, 1 no table and a
     * header seen (feed() reads no row), 2 no header yet (_row's classic 9 or 13 cells), 3 a table
     * whose size column is lead_size (_int of that cell) */
    int idle_mode;
    /* the type and op names a row may hold (nccl_tests._DTYPES | _REDOPS) */
    char *word[TESTS_MAX_WORDS];
    Py_ssize_t word_len[TESTS_MAX_WORDS];
    int nwords;
    /* the last type and op names a row held, and their strings (tests_name; a length 0: none yet) */
    char last_dtype[TESTS_NAME_KEPT], last_redop[TESTS_NAME_KEPT];
    Py_ssize_t last_dtype_len, last_redop_len;
    int last_dtype_str, last_redop_str;
    /* the columns: records.Collective's fields (wrong_valid: 0 where wrong is None) */
    ibuf c_op, c_size, c_count, c_dtype, c_redop, c_root, c_wrong, c_wrong_valid, c_in_place, c_line, c_process;
    dbuf c_time, c_algbw, c_busbw;
} Tests;

static void tests_free(Tests *t) {
    if (!t) return;
    Py_XDECREF(t->parser);
    Py_XDECREF(t->result);
    Py_XDECREF(t->table);
    Py_XDECREF(t->headers);
    for (int i = 0; i < TESTS_LAYOUTS; i++) Py_XDECREF(t->layout_table[i]);
    Py_XDECREF(t->field_settings);
    Py_XDECREF(t->header_dict);
    for (int i = 0; i < TESTS_HEADERS; i++) Py_XDECREF(t->header_value[i]);
    for (int i = 0; i < t->nwords; i++) free(t->word[i]);
    ibuf *ib[] = {&t->c_op, &t->c_size, &t->c_count, &t->c_dtype, &t->c_redop, &t->c_root, &t->c_wrong,
                  &t->c_wrong_valid, &t->c_in_place, &t->c_line, &t->c_process};
    for (size_t i = 0; i < sizeof(ib) / sizeof(*ib); i++) free(ib[i]->v);
    free(t->c_time.v);
    free(t->c_algbw.v);
    free(t->c_busbw.v);
    free(t);
}

static Py_ssize_t tests_pending(const Tests *t) { return t ? t->c_line.n : 0; }

/* The interned str of `name` (a string literal: its address is the cache key), a new reference:
 * the attribute names and Table keys read at each header and each scan's start, made once. */
static PyObject *tests_key(const char *name) {
    static struct { const char *name; PyObject *key; } cache[48];
    static int used;
    for (int i = 0; i < used; i++)
        if (cache[i].name == name) return Py_NewRef(cache[i].key);
    PyObject *key = PyUnicode_InternFromString(name);
    if (!key || used == 48) return key;
    cache[used].name = name, cache[used].key = Py_NewRef(key);
    used++;
    return key;
}

/* A column index from a Table dict ({name: index}); -1 when absent. */
static int tests_index(PyObject *dict, const char *key, int *out) {
    if (!PyDict_Check(dict)) { PyErr_SetString(PyExc_TypeError, "a Table's columns are dicts"); return -1; }
    PyObject *k = tests_key(key);
    if (!k) return -1;
    PyObject *v = PyDict_GetItemWithError(dict, k);
    Py_DECREF(k);
    if (!v) { *out = -1; return PyErr_Occurred() ? -1 : 0; }
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    *out = x < 0 ? -1 : x > 100000 ? 100000 : (int)x;  /* past any row's tokens: absent from every row read here */
    return 0;
}

static int tests_read_layout(Tests *t, PyObject *table);

/* The layout of the parser's Table (lead: size count type redop root; each side: time algbw busbw
 * wrong), kept per Table for its next header: a file's tests alternate between a few. */
static int tests_layout(Tests *t, PyObject *table) {
    Py_INCREF(table);
    Py_XSETREF(t->table, table);
    for (int i = 0; i < TESTS_LAYOUTS; i++)
        if (t->layout_table[i] == table) {
            t->lay = t->layouts[i];
            return 0;
        }
    if (tests_read_layout(t, table) < 0) return -1;
    int slot = t->next_layout;
    t->next_layout = (slot + 1) % TESTS_LAYOUTS;
    t->layouts[slot] = t->lay;
    Py_XSETREF(t->layout_table[slot], Py_NewRef(table));
    return 0;
}

/* tests_layout's reading of a Table not kept. */
static int tests_read_layout(Tests *t, PyObject *table) {
    t->lay.layout_ok = 0;
    PyObject *lead = PyObject_GetAttrString(table, "lead");
    if (!lead) return -1;
    int bad = tests_index(lead, "size", &t->lay.lead_size) < 0 || tests_index(lead, "count", &t->lay.lead_count) < 0
        || tests_index(lead, "type", &t->lay.lead_type) < 0 || tests_index(lead, "redop", &t->lay.lead_redop) < 0
        || tests_index(lead, "root", &t->lay.lead_root) < 0;
    Py_DECREF(lead);
    if (bad) return -1;
    PyObject *sides = PyObject_GetAttrString(table, "sides");
    if (!sides) return -1;
    if (!PyList_Check(sides)) { Py_DECREF(sides); PyErr_SetString(PyExc_TypeError, "Table.sides is a list"); return -1; }
    Py_ssize_t ns = PyList_GET_SIZE(sides);
    if (ns > TESTS_MAX_SIDES) { Py_DECREF(sides); return 0; }  /* rows of such a table are Python's */
    for (Py_ssize_t k = 0; k < ns; k++) {
        PyObject *side = PyList_GET_ITEM(sides, k);
        if (tests_index(side, "time", &t->lay.side_time[k]) < 0 || tests_index(side, "algbw", &t->lay.side_algbw[k]) < 0
            || tests_index(side, "busbw", &t->lay.side_busbw[k]) < 0 || tests_index(side, "wrong", &t->lay.side_wrong[k]) < 0) {
            Py_DECREF(sides);
            return -1;
        }
    }
    Py_DECREF(sides);
    t->lay.nsides = (int)ns;
    t->lay.layout_ok = 1;
    return 0;
}

/* getattr(obj, name) by an interned name made once (tests_in reads a dozen a scan, and a scan
 * stops at every line Python reads). name: a string literal (tests_key). */
static PyObject *tests_attr(PyObject *obj, const char *name) {
    PyObject *key = tests_key(name);
    if (!key) return NULL;
    PyObject *v = PyObject_GetAttr(obj, key);
    Py_DECREF(key);
    return v;
}

/* A list's length from an attribute, -1 on error (not a list). */
static Py_ssize_t tests_len(PyObject *obj, const char *name) {
    PyObject *v = tests_attr(obj, name);
    if (!v) return -1;
    Py_ssize_t n = PyList_Check(v) ? PyList_GET_SIZE(v) : -1;
    Py_DECREF(v);
    if (n < 0) PyErr_Format(PyExc_TypeError, "%s must be a list", name);
    return n;
}

static int tests_table_in(Scanner *self);

/* No pid's device row known to change nothing (every slot's stamp an old one). */
static void tests_forget_pids(Tests *t) {
    t->device_pids = t->idle_used = 0;
    if (++t->device_stamp == 0) {  /* (wrapped: a slot's old stamp could be the new one) */
        memset(t->device_slot_stamp, 0, sizeof(t->device_slot_stamp));
        for (int i = 0; i < 2 * TESTS_IDLE; i++) t->idle_slot[i].stamp = 0;
        t->device_stamp = 1;
    }
}

/* The slot of the pid whose digits are d[0:len] (*found), or the free slot where it goes (-1: none,
 * which tests_device, filling 3/4 of the table at most, never sees). */
static int tests_pid_slot(const Tests *t, const char *d, Py_ssize_t len, int *found) {
    unsigned slot = fnv1a(d, len) & (TESTS_PIDS - 1);
    *found = 0;
    for (int k = 0; k < TESTS_PIDS; k++, slot = (slot + 1) & (TESTS_PIDS - 1)) {
        if (t->device_slot_stamp[slot] != t->device_stamp) return (int)slot;
        if (t->device_pid_len[slot] == len && memeq(t->device_pid[slot], d, (size_t)len)) {
            *found = 1;
            return (int)slot;
        }
    }
    return -1;
}

/* What the parser's state lets this scan read. */
static int tests_in(Scanner *self) {
    Tests *t = self->tests;
    t->rows_ok = t->comments_ok = t->idle_mode = 0;
    tests_forget_pids(t);  /* (Python may have changed the processes since) */
    if (!t->parser) return 0;
    /* A row held for a late op name: every `#` line may release it (HOLD_LINES), every row joins it. */
    Py_ssize_t held = tests_len(t->parser, "held");
    if (held < 0) return -1;
    if (held) return 0;
    t->comments_ok = 1;
    PyObject *headers = tests_attr(t->parser, "headers");
    if (!headers) return -1;
    Py_XSETREF(t->headers, PyDict_Check(headers) ? headers : NULL);  /* (not a dict: every header is Python's) */
    if (!t->headers) Py_DECREF(headers);
    PyObject *ranks = tests_attr(t->parser, "ranks");
    if (!ranks) return -1;
    t->ranks = -1;
    if (PyTuple_Check(ranks) && PyTuple_GET_SIZE(ranks) == 2 && PyLong_Check(PyTuple_GET_ITEM(ranks, 0))) {
        int overflow;
        t->ranks = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(ranks, 0), &overflow);
        if (overflow || t->ranks < 0) t->ranks = -1;  /* (then every device row is Python's) */
    }
    Py_DECREF(ranks);
    PyObject *settings = tests_attr(t->result, "settings");
    if (!settings) return -1;
    t->gpu_set = PyDict_Check(settings) ? PyDict_Contains(settings, self->tests_gpu_key) : 0;
    int has_tests = PyDict_Check(settings) ? PyDict_Contains(settings, self->tests_version_key) : 0;
    int has_nccl = PyDict_Check(settings) ? PyDict_Contains(settings, self->nccl_version_key) : 0;
    Py_DECREF(settings);
    if (t->gpu_set < 0 || has_tests < 0 || has_nccl < 0) return -1;
    PyObject *formats = tests_attr(t->result, "formats");
    if (!formats) return -1;
    int has_format = PyList_Check(formats) ? PySequence_Contains(formats, self->tests_name) : 0;
    Py_DECREF(formats);
    if (has_format < 0) return -1;
    t->format_set = has_format;
    t->versions_set = has_tests && has_nccl && has_format;
    /* Python's rows come first: native.py moves them in */
    if ((t->pending = tests_len(t->result, "collectives")) < 0) return -1;
    return tests_table_in(self);
}

static int tests_table_set(Scanner *self, PyObject *op, PyObject *table, int warned, int seen);

/* What the parser's test, table and op let this scan read (tests_in's reading). The rest it read
 * stays: only Python changes the parser's held rows, headers and ranks, and the result's rows; the
 * settings and formats only grow, where flags read before say less than they might. A line read
 * here that moves them (tests_move) sets the state from what it set (tests_table_set). */
static int tests_table_in(Scanner *self) {
    Tests *t = self->tests;
    t->rows_ok = t->idle_mode = 0;
    PyObject *test = tests_attr(t->parser, "test"), *ended = test ? tests_attr(t->parser, "test_ended") : NULL;
    int overflow = 0, ended_now = ended ? PyObject_IsTrue(ended) : -1;
    t->test = test && PyLong_Check(test) ? PyLong_AsLongLongAndOverflow(test, &overflow) : -1;
    Py_XDECREF(test);
    Py_XDECREF(ended);
    if (ended_now < 0) return -1;
    t->ended = ended_now;
    if (overflow || t->test < 0) t->test = -1;  /* (then every footer is Python's) */
    PyObject *op = tests_attr(t->parser, "op");
    if (!op) return -1;
    PyObject *table = tests_attr(t->parser, "table");
    if (!table) { Py_DECREF(op); return -1; }
    /* wrong_warned where a table is; seen_header where none is (a table is opened by a header) */
    PyObject *flag = tests_attr(t->parser, table == Py_None ? "seen_header" : "wrong_warned");
    int set = flag ? PyObject_IsTrue(flag) : -1;
    Py_XDECREF(flag);
    int status = set < 0 ? -1 : table == Py_None ? tests_table_set(self, op, table, 0, set) : tests_table_set(self, op, table, set, 1);
    Py_DECREF(table);
    Py_DECREF(op);
    return status;
}

/* tests_table_in's state from the parser's op, table, wrong_warned (where a table is) and
 * seen_header (t->test and t->ended set already). */
static int tests_table_set(Scanner *self, PyObject *op, PyObject *table, int warned, int seen) {
    Tests *t = self->tests;
    t->rows_ok = t->idle_mode = 0;
    t->seen_header = seen;
    t->op_known = PyUnicode_Check(op) && PyUnicode_CompareWithASCIIString(op, "unknown") != 0 && t->format_set;
    if (table == Py_None) {
        t->idle_mode = seen ? 1 : 2;
        return 0;
    }
    if (table != t->table && tests_layout(t, table) < 0) return -1;
    if (t->lay.layout_ok) t->idle_mode = 3;
    if (!PyUnicode_Check(op)) { PyErr_SetString(PyExc_TypeError, "nccl_tests.Parser.op is a str"); return -1; }
    /* An op named after the table renames its rows (held or not): only rows of a named op here. */
    if (t->ended || PyUnicode_CompareWithASCIIString(op, "unknown") == 0) return 0;
    if (t->pending) return 0;
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(op, &len);
    if (!text || (t->op = intern_str(self, text, len)) < 0) return -1;
    t->wrong_warned = warned;
    t->rows_ok = t->lay.layout_ok;
    return 0;
}

enum { TK_INT, TK_DEC, TK_NONE };  /* a cell: an integer, a plain decimal, or what float() refuses (None) */

/* Past the whitespace at s[i] (is_space): a row's cells are padded with runs of spaces, skipped 8
 * bytes at a time. */
static inline Py_ssize_t tests_blanks(const char *s, Py_ssize_t n, Py_ssize_t i) {
    for (;;) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        for (; i + 8 <= n; i += 8) {
            uint64_t u;
            memcpy(&u, s + i, 8);
            u ^= 0x2020202020202020ull;  /* (a space is a zero byte) */
            if (u) {
                i += __builtin_ctzll(u) >> 3;  /* the first byte that is no space (little-endian) */
                break;
            }
        }
#endif
        if (i >= n || !is_space(s[i])) return i;
        i++;  /* a tab, or another whitespace byte, or one of the last 7 */
    }
}

/* A row's cell, read in one pass: its kind (TK_*, -1 when Python must read the row) and, for a
 * number, its digits as to_double reads them (m, the significant digits, the digits after the
 * dot), so that its int (_int) and its float (_float) need no second pass. */
typedef struct {
    Py_ssize_t at, len;
    uint64_t m;  /* the digits (exact while digits <= 15 or the cell is an int of TESTS_INT_DIGITS at most) */
    int kind, neg, digits, frac;
} tests_cell;

/* The kind of s[0:n] (n > 0) into *c (c->kind), its number's parts where it is one. */
static inline int tests_cell_read(const Tests *t, const char *s, Py_ssize_t n, tests_cell *c) {
    Py_ssize_t i = s[0] == '-', d = i;
    uint64_t m = 0;
    int digits = 0, frac = 0;
    unsigned v;
    for (; d < n && (v = (unsigned char)s[d] - '0') <= 9; d++) {  /* (as to_double counts them) */
        m = m * 10 + v;
        digits += m != 0;
    }
    c->neg = (int)i, c->m = m, c->digits = digits, c->frac = 0;
    if (d > i && d == n) return c->kind = n <= TESTS_INT_DIGITS ? TK_INT : -1;
    if (d > i && s[d] == '.' && d + 1 < n) {
        Py_ssize_t f = d + 1;
        for (; f < n && (v = (unsigned char)s[f] - '0') <= 9; f++) {
            m = m * 10 + v;
            digits += m != 0;
            frac++;
        }
        c->m = m, c->digits = digits, c->frac = frac;
        return c->kind = f == n ? TK_DEC : -1;
    }
    if (n == 3 && memeq(s, "N/A", 3)) return c->kind = TK_NONE;
    for (int w = 0; w < t->nwords; w++)
        if (t->word_len[w] == n && memeq(t->word[w], s, (size_t)n)) return c->kind = TK_NONE;  /* a name: no number */
    return c->kind = -1;
}

/* _float of a cell: NaN (None) for N/A or a name; to_double's value, its fast path taken here from
 * the digits read (at most 15 significant ones, 22 after the dot: one exact division), else
 * to_double itself. */
static inline double tests_cell_double(const char *s, const tests_cell *c) {
    if (c->kind == TK_NONE) return NAN;
    if (c->digits <= 15 && c->frac <= 22) {
        double v = (double)c->m / POW10[c->frac];
        return c->neg ? -v : v;
    }
    return to_double(s + c->at, c->len);
}

/* nccl_tests._int of a cell: OK with *v (or *none), PYTHON for a decimal (float() then int()). */
static inline int tests_cell_int(const tests_cell *c, int64_t *v, int *none) {
    *none = c->kind == TK_NONE;
    if (c->kind == TK_DEC) return PYTHON;
    if (c->kind == TK_INT) *v = c->neg ? -(int64_t)c->m : (int64_t)c->m;  /* at most 18 digits: exact */
    return OK;
}

#define TESTS_ROW_WORDS 8  /* a row of at most 512 bytes is split by its space mask; a longer one byte by byte */

/* The bits of the spaces among 8 bytes (bit k: byte k, little-endian; SWAR: a space's byte is zero
 * once xored with spaces, its high bit found exactly, then the 8 packed). */
static inline uint64_t tests_spaces8(uint64_t x) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    uint64_t y = x ^ 0x2020202020202020ull;
    uint64_t z = ~(((y & 0x7f7f7f7f7f7f7f7full) + 0x7f7f7f7f7f7f7f7full) | y) & 0x8080808080808080ull;
    return ((z >> 7) * 0x0102040810204080ull) >> 56;  /* byte k's bit to bit k */
}

/* Bit i of mask[i / 64]: s[i] is a space (every place past n one too; n <= 504). Bytes past s[n]
 * are never read: the last 8 are read ending at s[n] and shifted. */
static inline void tests_space_mask(const char *s, Py_ssize_t n, uint64_t *mask) {
    for (int w = 0; w < TESTS_ROW_WORDS; w++) mask[w] = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        mask[i >> 6] |= tests_spaces8(x) << (i & 63);
    }
    Py_ssize_t r = n - i;  /* 0 to 7 bytes left, at s[i] (i a multiple of 8: their 8 bits in one word) */
    uint64_t tail = 0xffull << r;  /* (the places past n) */
    if (r && n >= 8) {
        uint64_t x;
        memcpy(&x, s + n - 8, 8);
        tail |= tests_spaces8(x) >> (8 - r);
    } else {
        for (Py_ssize_t k = 0; k < r; k++) tail |= (uint64_t)(s[i + k] == ' ') << k;
    }
    mask[i >> 6] |= (tail & 0xff) << (i & 63);
    Py_ssize_t past = i + 8;  /* every place from here on: a space */
    if (past & 63) mask[past >> 6] |= ~0ull << (past & 63);
    for (Py_ssize_t w = (past + 63) >> 6; w < TESTS_ROW_WORDS; w++) mask[w] = ~0ull;
}

/* str.split() of a row into cells, each read (tests_cell_read): their count, -1 where Python
 * must read the row (a cell of no kind here, too many), -2 where the spaces alone do not split it
 * as str.split() does (another whitespace byte in it, or a row past 512 bytes: tests_split_bytes).
 * A cell starts at a non-space after a space (or the line's start) and ends at a space after a
 * non-space: both found from the mask a word at a time. */
static int tests_split(const Tests *t, const char *s, Py_ssize_t n, tests_cell *cells) {
    if (n > TESTS_ROW_WORDS * 64 - 8) return -2;
    uint64_t mask[TESTS_ROW_WORDS];
    tests_space_mask(s, n, mask);
    int nt = 0, ne = 0;
    uint64_t carry = 1;  /* the bit of the place before: a space (the line's start) */
    for (int w = 0; w < TESTS_ROW_WORDS && (Py_ssize_t)w * 64 <= n; w++) {
        uint64_t m = mask[w], before = m << 1 | carry;
        uint64_t starts = ~m & before, ends = m & ~before;
        carry = m >> 63;
        for (; starts; starts &= starts - 1) {
            if (nt == TESTS_MAX_TOKENS) return -1;
            cells[nt++].at = (Py_ssize_t)w * 64 + __builtin_ctzll(starts);
        }
        for (; ends; ends &= ends - 1) {
            tests_cell *c = &cells[ne++];
            Py_ssize_t e = (Py_ssize_t)w * 64 + __builtin_ctzll(ends);
            c->len = e - c->at;
            if (tests_cell_read(t, s + c->at, c->len, c) < 0) {
                for (Py_ssize_t k = c->at; k < e; k++)
                    if (is_space(s[k])) return -2;  /* a tab, say: split byte by byte */
                return -1;
            }
        }
    }
    return ne == nt ? nt : -2;  /* (every cell ends: the places past n are spaces) */
}

/* tests_split on every whitespace byte (is_space, as str.split() on ASCII), a byte at a time. */
static int tests_split_bytes(const Tests *t, const char *s, Py_ssize_t n, tests_cell *cells) {
    int nt = 0;
    for (Py_ssize_t i = 0; i < n;) {
        while (i < n && is_space(s[i])) i++;
        if (i >= n) break;
        Py_ssize_t start = i;
        while (i < n && !is_space(s[i])) i++;
        if (nt == TESTS_MAX_TOKENS) return -1;
        tests_cell *c = &cells[nt++];
        c->at = start, c->len = i - start;
        if (tests_cell_read(t, s + start, i - start, c) < 0) return -1;
    }
    return nt;
}

/* The scanner's string of a row's type or op name, the last one kept (a table's rows name the same). */
static inline int tests_name(Scanner *self, const char *s, Py_ssize_t n, char *last, Py_ssize_t *last_len, int *last_str) {
    if (*last_len == n && memeq(last, s, (size_t)n)) return *last_str;  /* (n > 0: a cell) */
    int k = intern_str(self, s, n);
    if (k >= 0 && n <= TESTS_NAME_KEPT) {
        memcpy(last, s, (size_t)n);
        *last_len = n, *last_str = k;
    }
    return k;
}

/* A data row (nccl_tests.Parser._row with the parser's table). */
static int tests_row(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno) {
    Tests *t = self->tests;
    if (!t->rows_ok) return PYTHON;
    tests_cell cell[TESTS_MAX_TOKENS];
    /* Every cell, used or not: one the context watcher could take for a format's words is Python's. */
    int nt = tests_split(t, s, n, cell);
    if (nt == -2) nt = tests_split_bytes(t, s, n, cell);
    if (nt < 0) return PYTHON;
#define HAS(idx) ((idx) >= 0 && (idx) < nt)
    int64_t size = 0, count = 0, root = -1;
    int none = 1, count_none = 1, root_none = 0;
    if (!HAS(t->lay.lead_size) || tests_cell_int(&cell[t->lay.lead_size], &size, &none) != OK)
        return HAS(t->lay.lead_size) ? PYTHON : OK;
    if (none) return OK;
    if (HAS(t->lay.lead_count) && tests_cell_int(&cell[t->lay.lead_count], &count, &count_none) != OK) return PYTHON;
    if (HAS(t->lay.lead_root) && tests_cell_int(&cell[t->lay.lead_root], &root, &root_none) != OK) return PYTHON;
    /* dtype.isidentifier(): of the cells read here only the names are identifiers */
    const tests_cell *type = HAS(t->lay.lead_type) ? &cell[t->lay.lead_type] : NULL;
    int dtype_ok = type && type->kind == TK_NONE && !(type->len == 3 && memeq(s + type->at, "N/A", 3));
    if (count_none || root_none || !dtype_ok) return OK;
    int dtype = tests_name(self, s + type->at, type->len, t->last_dtype, &t->last_dtype_len, &t->last_dtype_str);
    int redop = HAS(t->lay.lead_redop)
        ? tests_name(self, s + cell[t->lay.lead_redop].at, cell[t->lay.lead_redop].len, t->last_redop,
                     &t->last_redop_len, &t->last_redop_str)
        : intern_str(self, "", 0);
    if (dtype < 0 || redop < 0) return ERROR;
    double time[TESTS_MAX_SIDES], algbw[TESTS_MAX_SIDES], busbw[TESTS_MAX_SIDES];
    int64_t wrong[TESTS_MAX_SIDES];
    int wrong_valid[TESTS_MAX_SIDES], side[TESTS_MAX_SIDES], rows = 0;
    for (int k = 0; k < t->lay.nsides; k++) {
        if (!HAS(t->lay.side_busbw[k])) break;  /* a row cut short keeps the sides it has */
        int idx[3] = {t->lay.side_time[k], t->lay.side_algbw[k], t->lay.side_busbw[k]};
        double v[3];
        for (int j = 0; j < 3; j++)  /* _float: None (NaN here) for N/A, a name or no cell */
            v[j] = HAS(idx[j]) ? tests_cell_double(s, &cell[idx[j]]) : NAN;
        if (isnan(v[0]) && isnan(v[1]) && isnan(v[2])) continue;
        int wrong_none = 1;
        wrong[rows] = 0;
        if (HAS(t->lay.side_wrong[k]) && tests_cell_int(&cell[t->lay.side_wrong[k]], &wrong[rows], &wrong_none) != OK)
            return PYTHON;
        /* The first wrong count of a table is warned about (the parser's one warning): Python's. */
        if (!wrong_none && wrong[rows] != 0 && !t->wrong_warned) return PYTHON;
        time[rows] = v[0], algbw[rows] = v[1], busbw[rows] = v[2], wrong_valid[rows] = !wrong_none, side[rows] = k;
        rows++;
    }
#undef HAS
    for (int r = 0; r < rows; r++) {
        if (ipush(&t->c_op, t->op) < 0 || ipush(&t->c_size, size) < 0 || ipush(&t->c_count, count) < 0
            || ipush(&t->c_dtype, dtype) < 0 || ipush(&t->c_redop, redop) < 0 || ipush(&t->c_root, root) < 0
            || dpush(&t->c_time, time[r]) < 0 || dpush(&t->c_algbw, algbw[r]) < 0 || dpush(&t->c_busbw, busbw[r]) < 0
            || ipush(&t->c_wrong, wrong[r]) < 0 || ipush(&t->c_wrong_valid, wrong_valid[r]) < 0
            || ipush(&t->c_in_place, side[r] == 1) < 0 || ipush(&t->c_line, lineno) < 0
            || ipush(&t->c_process, self->s_main) < 0) return ERROR;
    }
    return OK;
}


/* What tests_marks finds in a line: the literals _comment and the Tagger look for (case as written),
 * and TM_WORDY, a word the context watcher looks for in any case (context.WORDS, read wider: a line
 * the scanner reads is never offered to it) or a line too long to read here. */
enum { TM_PID = 1, TM_RANK = 2, TM_BUSBW = 4, TM_AVG = 8, TM_OOB = 16, TM_COLL = 32, TM_NTHREAD = 64,
       TM_VERSION = 128, TM_WORDY = 256 };
/* what a device row holds none of: _comment's tests before "Rank", and the context watcher's words */
#define TM_NOT_DEVICE (TM_BUSBW | TM_AVG | TM_OOB | TM_COLL | TM_NTHREAD | TM_VERSION | TM_WORDY)

/* s[i:i+k] == w (k = strlen(w)), w's case only */
static inline int tests_at(const char *s, Py_ssize_t n, Py_ssize_t i, const char *w, Py_ssize_t k) {
    return i + k <= n && memeq(s + i, w, (size_t)k);
}

/* s[i:i+k].lower() == w (w: lower case, no letter of it upper) */
static inline int tests_lower_at(const char *s, Py_ssize_t n, Py_ssize_t i, const char *w, Py_ssize_t k) {
    if (i + k > n) return 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        char c = s[i + j];
        if ((c >= 'A' && c <= 'Z' ? (char)(c + 32) : c) != w[j]) return 0;
    }
    return 1;
}
#define TESTS_AT(w) tests_at(s, n, i, (w), (Py_ssize_t)sizeof(w) - 1)
#define TESTS_WORD(w) tests_lower_at(s, n, i + 1, (w), (Py_ssize_t)sizeof(w) - 1)  /* after the first letter */

/* The first two letters of every word tests_marks looks for (in any case where the word's case is
 * any), in a bit set: a place where none starts costs a look-up, not a switch. */
static const char *TESTS_PAIRS_EXACT[] = {"Pi", "Ra", "bu", "Ou", "Av", "Co", "nT", "nc"},
                  *TESTS_PAIRS_ANY_CASE[] = {"ac", "av", "cc", "nc", "th", "sp", "se", "st"};
static uint8_t tests_pairs[65536 / 8];
static int tests_pairs_made;

static void tests_pair(unsigned a, unsigned b) {
    tests_pairs[(a << 8 | b) >> 3] |= (uint8_t)(1u << (b & 7));
}

static void tests_make_pairs(void) {
    for (size_t k = 0; k < sizeof(TESTS_PAIRS_EXACT) / sizeof(*TESTS_PAIRS_EXACT); k++)
        tests_pair((unsigned char)TESTS_PAIRS_EXACT[k][0], (unsigned char)TESTS_PAIRS_EXACT[k][1]);
    for (size_t k = 0; k < sizeof(TESTS_PAIRS_ANY_CASE) / sizeof(*TESTS_PAIRS_ANY_CASE); k++)
        for (int c = 0; c < 4; c++)
            tests_pair((unsigned char)TESTS_PAIRS_ANY_CASE[k][0] - (c & 1 ? 32 : 0),
                       (unsigned char)TESTS_PAIRS_ANY_CASE[k][1] - (c & 2 ? 32 : 0));
    tests_pairs_made = 1;
}

/* The TM_ marks of the words that start at s[i] (i + 1 < n). */
static inline unsigned tests_marks_at(const char *s, Py_ssize_t n, Py_ssize_t i) {
    unsigned m = 0, key = (unsigned)(unsigned char)s[i] << 8 | (unsigned char)s[i + 1];
    if (!(tests_pairs[key >> 3] & (1u << (key & 7)))) return 0;
    switch (s[i]) {
    case 'P': if (TESTS_AT("Pid")) m |= TM_PID; break;
    case 'R': if (TESTS_AT("Rank")) m |= TM_RANK; break;
    case 'b': if (TESTS_AT("busbw")) m |= TM_BUSBW; break;
    case 'O': if (TESTS_AT("Out of bounds")) m |= TM_OOB; break;
    case 'A': if (TESTS_AT("Avg bus bandwidth")) m |= TM_AVG; /* fall through */
    case 'a':
        if (TESTS_WORD("cceptanc") || TESTS_WORD("ccept length") || TESTS_WORD("vg bus bandwidth")) m |= TM_WORDY;
        break;
    case 'C': if (TESTS_AT("Collective test")) m |= TM_COLL; /* fall through */
    case 'c': if (TESTS_WORD("cl version")) m |= TM_WORDY; break;
    case 'n':
        if (TESTS_AT("nThread")) m |= TM_NTHREAD;
        if (TESTS_AT("nccl-tests version")) m |= TM_VERSION;
        /* fall through */
    case 'N': if (TESTS_WORD("ccl_")) m |= TM_WORDY; break;
    case 't': case 'T': if (TESTS_WORD("hroughput")) m |= TM_WORDY; break;
    case 's': case 'S':
        if (TESTS_WORD("pecdecod") || TESTS_WORD("et by environment") || TESTS_WORD("tatistics")
            || TESTS_WORD("peculative"))
            m |= TM_WORDY;
        break;
    default: break;
    }
    return m;
}

#ifdef HAVE_AVX2_PATH
/* tests_marks_at at the places whose two bytes may be a pair of tests_pairs, found 32 places a step:
 * each pair's first and second byte looked up by their nibbles (pshufb, as line_avx2's fingerprints),
 * one bucket a first letter (its case either way; t and s share one). A place no bucket holds both
 * bytes of starts no word; the others are read whole (tests_marks_at checks the pair exactly). A
 * line of spaces, digits and punctuation has no candidate at all: no letter pair starts there. Bytes
 * past s[n] are never read: the last step reads a copy padded with zeros (in no bucket). */
static uint8_t tests_fp_lo[2][16], tests_fp_hi[2][16];

static void tests_fp_pair(unsigned a, unsigned b) {
    static const char FIRST[] = "prboacn";  /* a bucket each, then t and s in the last */
    const char *at = strchr(FIRST, (char)(a | 0x20));
    uint8_t bit = (uint8_t)(1u << (at ? at - FIRST : 7));
    tests_fp_lo[0][a & 15] |= bit, tests_fp_hi[0][a >> 4] |= bit;
    tests_fp_lo[1][b & 15] |= bit, tests_fp_hi[1][b >> 4] |= bit;
}

__attribute__((target("avx2")))
static unsigned tests_marks_avx2(const char *s, Py_ssize_t n) {
    static int made;
    if (!made) {  /* every pair of tests_pairs, from the bit set itself */
        for (unsigned key = 0; key < 65536; key++)
            if (tests_pairs[key >> 3] & (1u << (key & 7))) tests_fp_pair(key >> 8, key & 255);
        made = 1;
    }
    const __m256i low = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
    __m256i lo0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tests_fp_lo[0])),
            hi0 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tests_fp_hi[0])),
            lo1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tests_fp_lo[1])),
            hi1 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tests_fp_hi[1]));
    unsigned m = 0;
    char pad[64];
    for (Py_ssize_t i = 0; i + 1 < n; i += 32) {
        const char *p = s + i;
        if (n - i < 33) {  /* the two loads would pass s[n] */
            memset(pad, 0, sizeof(pad));
            memcpy(pad, p, (size_t)(n - i));
            p = pad;
        }
        __m256i v0 = _mm256_loadu_si256((const __m256i *)p), v1 = _mm256_loadu_si256((const __m256i *)(p + 1));
        __m256i a = _mm256_and_si256(_mm256_shuffle_epi8(lo0, _mm256_and_si256(v0, low)),
                                     _mm256_shuffle_epi8(hi0, _mm256_and_si256(_mm256_srli_epi16(v0, 4), low)));
        __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(lo1, _mm256_and_si256(v1, low)),
                                     _mm256_shuffle_epi8(hi1, _mm256_and_si256(_mm256_srli_epi16(v1, 4), low)));
        uint32_t found = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(a, b), zero));
        if (n - 1 - i < 32) found &= (1u << (n - 1 - i)) - 1;  /* places with a byte after them */
        for (; found; found &= found - 1) m |= tests_marks_at(s, n, i + __builtin_ctz(found));
    }
    return m;
}
#endif

/* The TM_ marks of s[0:n], in one pass: a place whose letter starts none of the words costs one
 * look-up (a `#` line was searched once per literal, and a device row read ten times over); with
 * AVX2, 32 places a step. */
static unsigned tests_marks(const char *s, Py_ssize_t n) {
    if (!tests_pairs_made) tests_make_pairs();
    unsigned m = n > 1024 ? TM_WORDY : 0;  /* (a long line is Python's) */
#ifdef HAVE_AVX2_PATH
    if (avx2_ok) return m | tests_marks_avx2(s, n);
#endif
    for (Py_ssize_t i = 0; i + 1 < n; i++)  /* (every word is 3 letters or more) */
        m |= tests_marks_at(s, n, i);
    return m;
}
#undef TESTS_AT
#undef TESTS_WORD

static int tests_wordy(const char *s, Py_ssize_t n) { return (tests_marks(s, n) & TM_WORDY) != 0; }

static int64_t tests_value(const char *s, Py_ssize_t n);
static int tests_idle(const Tests *t, const char *s, Py_ssize_t n);

/* `# Collective test starting: all_reduce_perf` (or `concluded`): the op started, or none. */
static int tests_collective(Scanner *self, const char *s, Py_ssize_t n, const char *at) {
    Tests *t = self->tests;
    if (!t->format_set) return PYTHON;  /* (the format is added by the line) */
    /* _TEST.search: the first `Collective test` followed by its pattern, or a later one: Python's */
    Py_ssize_t j = at - s + 15, k;
    int starting = starts(s + j, n - j, " starting: "), concluded = starts(s + j, n - j, " concluded: ");
    if (!starting && !concluded) return find(s + j, n - j, "Collective test", 15) ? PYTHON : OK;
    j += starting ? 11 : 12;
    for (k = j; k < n && !is_space(s[k]); k++) {}
    if (k == j) return find(s + j, n - j, "Collective test", 15) ? PYTHON : OK;
    if (concluded) {
        /* Rows of a named table are never renamed; nothing is held (comments_ok): op_started = None */
        if (!t->op_known) return PYTHON;
        return PyObject_SetAttrString(t->parser, "op_started", Py_None) < 0 ? ERROR : OK;
    }
    /* op_name(): the program's base name without _mpi, then without _perf */
    Py_ssize_t base = j;  /* past the last '/' (rsplit("/", 1)[-1]) */
    for (Py_ssize_t q = j; q < k; q++)
        if (s[q] == '/') base = q + 1;
    const char *name = s + base;
    Py_ssize_t len = k - base;
    if (len >= 4 && memeq(name + len - 4, "_mpi", 4)) len -= 4;
    if (len >= 5 && memeq(name + len - 5, "_perf", 5)) len -= 5;
    PyObject *op = PyUnicode_DecodeASCII(name, len, NULL);
    int bad = !op || PyObject_SetAttrString(t->parser, "op_started", op) < 0;
    Py_XDECREF(op);
    return bad ? ERROR : OK;
}


/* The run's settings line, `# nThread 1 nGpus 2 minBytes 8 ... iters: 20`, where every setting it
 * names is set already (Parser._run_fields: `set()` keeps the first; no value of more than
 * TESTS_INT_DIGITS digits, whose read warns). _RUN_FIELD's findall, read by hand:
 * `([A-Za-z][A-Za-z ]*?):?\s+(\d[\w().]*)`, the shortest key that a value follows. */
static int tests_run_fields(Scanner *self, const char *s, Py_ssize_t n) {
    Tests *t = self->tests;
    if (!t->format_set || s[0] != '#') return PYTHON;
    PyObject *settings = tests_attr(t->result, "settings");
    if (!settings) return ERROR;
    int status = PyDict_Check(settings) ? OK : PYTHON;
    if (status == OK && settings == t->field_settings)  /* a line seen before: a test prints one each */
        for (int k = 0; k < TESTS_FIELD_LINES; k++)
            if (t->field_len[k] == n && memeq(t->field_line[k], s, (size_t)n)) { Py_DECREF(settings); return OK; }
    Py_ssize_t pos = 0;
    while (pos < n && s[pos] == '#') pos++;  /* text.lstrip("#") */
    while (status == OK && pos < n) {
        Py_ssize_t end = -1, vat = 0, vend = 0;
        if (is_alpha(s[pos])) {
            for (Py_ssize_t e = pos + 1; e <= n && end < 0; e++) {  /* the key s[pos:e], shortest first */
                for (int colon = 1; colon >= 0 && end < 0; colon--) {  /* `:?` tries the colon first */
                    Py_ssize_t j = e;
                    if (colon) { if (j >= n || s[j] != ':') continue; j++; }
                    if (j >= n || !is_space(s[j])) continue;
                    while (j < n && is_space(s[j])) j++;
                    if (j >= n || !is_digit(s[j])) continue;
                    vat = j;
                    for (vend = j + 1; vend < n && (is_word(s[vend]) || s[vend] == '(' || s[vend] == ')' || s[vend] == '.');)
                        vend++;
                    end = e;
                }
                if (end < 0 && (e >= n || !(is_alpha(s[e]) || s[e] == ' '))) break;  /* the key can grow no more */
            }
        }
        if (end < 0) { pos++; continue; }
        /* "nccl_tests." + "_".join(key.lower().split()) */
        char name[256];
        Py_ssize_t len = 11;
        memcpy(name, "nccl_tests.", 11);
        int gap = 0;
        for (Py_ssize_t k = pos; k < end && status == OK; k++) {
            if (s[k] == ' ') { gap = 1; continue; }
            if (len + 2 > (Py_ssize_t)sizeof(name)) { status = PYTHON; break; }
            if (gap && len > 11) name[len++] = '_';
            gap = 0;
            name[len++] = (char)(s[k] >= 'A' && s[k] <= 'Z' ? s[k] + 32 : s[k]);
        }
        if (status != OK) break;
        int digits = 1;
        for (Py_ssize_t k = vat; k < vend; k++) digits &= is_digit(s[k]);
        if (digits && vend - vat > TESTS_INT_DIGITS) { status = PYTHON; break; }  /* read_int may warn */
        PyObject *key = PyUnicode_FromStringAndSize(name, len);
        int known = key ? PyDict_Contains(settings, key) : -1;
        Py_XDECREF(key);
        if (known <= 0) status = known < 0 ? ERROR : PYTHON;
        pos = vend;
    }
    if (status == OK && n <= TESTS_FIELD_LINE_MAX) {
        if (settings != t->field_settings) {
            Py_XSETREF(t->field_settings, Py_NewRef(settings));
            for (int k = 0; k < TESTS_FIELD_LINES; k++) t->field_len[k] = 0;
        }
        memcpy(t->field_line[t->next_field], s, (size_t)n);
        t->field_len[t->next_field] = n;
        t->next_field = (t->next_field + 1) % TESTS_FIELD_LINES;
    }
    Py_DECREF(settings);
    return status;
}

/* Set the parser's attributes (names: string literals; values: new references, NULL for an error
 * made before) as _comment would: the caller then sets the state they make (tests_table_set, or a
 * footer's own), as tests_table_in would read it back. */
static int tests_move(Scanner *self, int k, const char **names, PyObject **values) {
    int bad = 0;
    for (int i = 0; i < k; i++) {
        PyObject *key = bad ? NULL : tests_key(names[i]);
        bad = bad || !values[i] || !key || PyObject_SetAttr(self->tests->parser, key, values[i]) < 0;
        Py_XDECREF(key);
        Py_XDECREF(values[i]);
    }
    return bad ? ERROR : OK;
}

/* The state after a footer read here: no table (the test ended where `ended`), what
 * tests_table_set makes of a None table. */
static int tests_footer_state(Tests *t, int ended) {
    if (ended) t->ended = 1;
    t->rows_ok = 0;
    t->idle_mode = t->seen_header ? 1 : 2;
    return OK;
}

/* A table header (a `#` line holding `busbw`) whose Table the parser made before (Parser.headers),
 * or a `busbw` line it found no header (None there: _comment returns). _comment with that Table:
 * the next test opened after a footer, the table, its op from the names read before it. */
/* Parser.headers[line] (borrowed), NULL where the line is not there (or an error is set): a line
 * found before, compared whole, without a str made and hashed. */
static PyObject *tests_header_of(Tests *t, const char *s, Py_ssize_t n) {
    if (t->header_dict != t->headers) {  /* (another dict: nothing found in the last one holds) */
        for (int i = 0; i < TESTS_HEADERS; i++) {
            Py_CLEAR(t->header_value[i]);
            t->header_len[i] = 0;
        }
        Py_XSETREF(t->header_dict, Py_NewRef(t->headers));
    }
    for (int i = 0; i < TESTS_HEADERS; i++)
        if (t->header_value[i] && t->header_len[i] == n && memeq(t->header_text[i], s, (size_t)n))
            return t->header_value[i];
    PyObject *key = PyUnicode_DecodeASCII(s, n, NULL);
    if (!key) return NULL;
    PyObject *value = PyDict_GetItemWithError(t->headers, key);
    Py_DECREF(key);
    if (value && n <= TESTS_HEADER_MAX) {
        int slot = t->next_header;
        t->next_header = (slot + 1) % TESTS_HEADERS;
        Py_XSETREF(t->header_value[slot], Py_NewRef(value));
        memcpy(t->header_text[slot], s, (size_t)n);
        t->header_len[slot] = n;
    }
    return value;
}

static int tests_header(Scanner *self, const char *s, Py_ssize_t n, unsigned marks) {
    Tests *t = self->tests;
    if (s[0] != '#' || !t->headers || marks & TM_WORDY) return PYTHON;
    PyObject *table = tests_header_of(t, s, n);
    if (!table) return PyErr_Occurred() ? ERROR : PYTHON;
    if (table == Py_None) return OK;
    if (!t->format_set || t->test < 0) return PYTHON;  /* (the format is added by the line) */
    PyObject *started = tests_attr(t->parser, "op_started");
    PyObject *command = started ? tests_attr(t->parser, "op_command") : NULL;
    PyObject *tables = command ? tests_attr(t->parser, "tables") : NULL;
    int use_started = tables ? PyObject_IsTrue(started) : -1;
    int use_command = use_started == 0 ? PyObject_IsTrue(command) : 0;
    PyObject *op = use_started > 0 ? started : use_command > 0 ? command : NULL;
    if (use_started < 0 || use_command < 0) {
        Py_XDECREF(started);
        Py_XDECREF(command);
        Py_XDECREF(tables);
        return ERROR;
    }
    if (op) Py_INCREF(op);
    else op = PyUnicode_FromString("unknown");
    Py_DECREF(started);
    Py_DECREF(command);
    PyObject *one = PyLong_FromLong(1);
    PyObject *more = one ? PyNumber_Add(tables, one) : NULL;
    Py_XDECREF(one);
    Py_DECREF(tables);
    const char *names[] = {"test", "test_ended", "table", "seen_header", "tables", "rows", "wrong_warned", "op"};
    Py_INCREF(table);
    Py_INCREF(table);  /* (kept, with op, for the state after the move) */
    Py_XINCREF(op);
    PyObject *values[] = {PyLong_FromLongLong(t->test + t->ended), Py_NewRef(Py_False), table, Py_NewRef(Py_True),
                          more, PyList_New(0), Py_NewRef(Py_False), op};
    int status = tests_move(self, 8, names, values);
    if (status == OK) {  /* test + 1 after a footer, not ended; the table, warned of nothing, its op */
        t->test += t->ended;
        t->ended = 0;
        status = tests_table_set(self, op, table, 0, 1) < 0 ? ERROR : OK;
    }
    Py_DECREF(table);
    Py_XDECREF(op);
    return status;
}

/* The text after `#\s*` `what` `\s*:\s*` (the footers' regexes), or -1 where it is not there. */
static Py_ssize_t tests_footer_value(const char *s, Py_ssize_t n, const char *what, Py_ssize_t k) {
    Py_ssize_t i = 1;
    while (i < n && is_space(s[i])) i++;
    if (!starts_len(s + i, n - i, what, k)) return -1;
    i += k;
    while (i < n && is_space(s[i])) i++;
    if (i >= n || s[i] != ':') return -1;
    for (i++; i < n && is_space(s[i]);) i++;
    return i;
}

/* Whether the footer's word after its value, `\s*(\w*)`, is FAILED (the check failed: a warning). */
static int tests_failed(const char *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && is_space(s[i])) i++;
    Py_ssize_t w = i;
    while (w < n && is_word(s[w])) w++;
    return w - i == 6 && memeq(s + i, "FAILED", 6);
}

/* `# Out of bounds values : 0 OK`: a count of 0 (another one is warned about, FAILED too), the
 * test ended, no table. A line that is not this footer only closes the table. */
static int tests_out_of_bounds(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno) {
    Tests *t = self->tests;
    if (s[0] != '#' || t->test < 0) return PYTHON;
    const char *names[] = {"table", "test_ended"};
    Py_ssize_t i = tests_footer_value(s, n, "Out of bounds values", 20), d = i;
    while (i >= 0 && d < n && is_digit(s[d])) d++;
    if (i < 0 || d == i) {  /* _OUT_OF_BOUNDS does not match */
        PyObject *values[] = {Py_NewRef(Py_None)};
        return tests_move(self, 1, names, values) == OK ? tests_footer_state(t, 0) : ERROR;
    }
    if (d - i > TESTS_INT_DIGITS || tests_value(s + i, d - i) != 0 || tests_failed(s, n, d)) return PYTHON;
    if (add_metric(self, t->s_oob, 0.0, t->test, lineno, t->s_source, self->s_empty, self->s_main) < 0) return ERROR;
    PyObject *values[] = {Py_NewRef(Py_None), Py_NewRef(Py_True)};
    return tests_move(self, 2, names, values) == OK ? tests_footer_state(t, 1) : ERROR;
}

/* The footer offered to the context watcher (offer_line, _scan_vllm.h: the line is wanted, nccl_tests'
 * STARTS `#` is on it). 0, or -1 on error. */
static int tests_offer_footer(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno) {
    return offer_line(self->vllm, s, n, NULL, lineno, 1);
}

/* `# Avg bus bandwidth    : 68.7056 `: a plain decimal (another value, FAILED, is Python's), its
 * metric, the test ended, no table; then offered to the context watcher, as every such line. */
static int tests_avg_busbw(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno) {
    Tests *t = self->tests;
    if (s[0] != '#' || t->test < 0 || !t->format_set || !self->vllm || !self->vllm->offer) return PYTHON;
    Py_ssize_t i = tests_footer_value(s, n, "Avg bus bandwidth", 17), d = i;
    if (i < 0) return PYTHON;
    while (d < n && is_digit(s[d])) d++;
    if (d == i) return PYTHON;
    if (d < n && s[d] == '.')
        for (d++; d < n && is_digit(s[d]);) d++;
    /* the end of `[\d.eE+-]+`: a plain decimal only */
    if (d < n && (s[d] == '.' || s[d] == 'e' || s[d] == 'E' || s[d] == '+' || s[d] == '-')) return PYTHON;
    if (tests_failed(s, n, d)) return PYTHON;
    if (add_metric(self, t->s_avg, to_double(s + i, d - i), t->test, lineno, t->s_source, self->s_empty,
                   self->s_main) < 0) return ERROR;
    const char *names[] = {"test_ended", "table"};
    PyObject *values[] = {Py_NewRef(Py_True), Py_NewRef(Py_None)};
    if (tests_move(self, 2, names, values) != OK) return ERROR;
    tests_footer_state(t, 1);
    return tests_offer_footer(self, s, n, lineno) < 0 ? ERROR : OK;
}

/* A `#` line as nccl_tests.Parser._comment reads it, where it changes nothing
 * but the op a `Collective test` line names: the table's title and units lines, `# Using devices`,
 * a version line whose settings are set, any other comment (*idle set where `idle` is given and
 * the line changed nothing, by what stays so till Python runs). */
static int tests_comment(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno, unsigned by_literal,
                         unsigned marks, int *idle) {
    Tests *t = self->tests;
    if (!t->comments_ok) return PYTHON;
    /* _comment's order: a header, the footers, then the rest */
    if (marks & TM_BUSBW) return by_literal ? PYTHON : tests_header(self, s, n, marks);
    if (marks & TM_AVG) return by_literal ? PYTHON : tests_avg_busbw(self, s, n, lineno);
    if (marks & TM_WORDY) return PYTHON;  /* never offered to the context watcher here */
    if (marks & TM_OOB) return by_literal ? PYTHON : tests_out_of_bounds(self, s, n, lineno);
    if (marks & TM_COLL) return tests_collective(self, s, n, find(s, n, "Collective test", 15));
    if (by_literal) return PYTHON;  /* `_perf` elsewhere: (a comment still, but rare) */
    if (marks & TM_NTHREAD) return tests_run_fields(self, s, n);  /* the run's settings */
    if (marks & TM_VERSION && !t->versions_set) return PYTHON;
    if (!(marks & TM_VERSION) && (marks & (TM_RANK | TM_PID)) == (TM_RANK | TM_PID)) return PYTHON;  /* an indented device row */
    if (idle) *idle = 1;  /* (what this depends on stays till Python runs: tests_idle_comment) */
    return OK;
}


/* `\s+WORD` at s[*i]: whitespace then the word; *i past it. */
static int tests_expect(const char *s, Py_ssize_t n, Py_ssize_t *i, const char *word) {
    Py_ssize_t j = *i, k = (Py_ssize_t)strlen(word);
    if (j >= n || !is_space(s[j])) return 0;
    while (j < n && is_space(s[j])) j++;
    if (!starts_len(s + j, n - j, word, k)) return 0;
    *i = j + k;
    return 1;
}

/* `\s+\d+` at s[*i]: its digits' place and length (at most TESTS_INT_DIGITS), *i past them. */
static int tests_digits(const char *s, Py_ssize_t n, Py_ssize_t *i, Py_ssize_t *at, Py_ssize_t *len) {
    Py_ssize_t j = *i;
    if (j >= n || !is_space(s[j])) return 0;
    while (j < n && is_space(s[j])) j++;
    Py_ssize_t d = j;
    while (d < n && is_digit(s[d])) d++;
    if (d == j || d - j > TESTS_INT_DIGITS) return 0;
    *at = j, *len = d - j, *i = d;
    return 1;
}

static int64_t tests_value(const char *s, Py_ssize_t n) {
    int64_t x = 0;
    for (Py_ssize_t i = 0; i < n; i++) x = x * 10 + (s[i] - '0');
    return x;
}

/* A device row, `#  Rank  0 Group  0 Pid   1377 on vm device  0 [0000:00:06] NVIDIA H200`, that
 * changes nothing: its process is known to the Tagger as it would make it again (same pid, a
 * host, the nccl-tests hint), the reader knows as many ranks or more and has its GPU name. What the
 * Tagger (processes._TESTS_DEVICE) and the reader (nccl_tests._DEVICE) match, read as one. A row
 * of the builds before the `Group` column (`#   Rank  0 Pid  14926 on v100-gpu-1 device  0 ...`)
 * is the reader's alone: the Tagger's pattern wants the column, and tags the line "main". */
static int tests_device(Scanner *self, const char *s, Py_ssize_t n, unsigned marks) {
    Tests *t = self->tests;
    if (!t->comments_ok || !t->gpu_set || t->ranks < 0 || s[0] != '#' || marks & TM_NOT_DEVICE) return PYTHON;
    Py_ssize_t i = 1, rank_at, rank_len, pid_at, pid_len, x, xl;
    if (!tests_expect(s, n, &i, "Rank") || !tests_digits(s, n, &i, &rank_at, &rank_len)) return PYTHON;
    Py_ssize_t after_rank = i;
    int group = tests_expect(s, n, &i, "Group") && tests_digits(s, n, &i, &x, &xl);  /* `(?:Group\s+\d+\s+)?` */
    if (!group) i = after_rank;
    if (!tests_expect(s, n, &i, "Pid") || !tests_digits(s, n, &i, &pid_at, &pid_len)
        || !tests_expect(s, n, &i, "on") || i >= n || !is_space(s[i])) return PYTHON;
    while (i < n && is_space(s[i])) i++;
    Py_ssize_t host_at = i;
    while (i < n && !is_space(s[i])) i++;
    if (i == host_at || !tests_expect(s, n, &i, "device") || !tests_digits(s, n, &i, &x, &xl)
        || i >= n || !is_space(s[i])) return PYTHON;
    while (i < n && is_space(s[i])) i++;
    if (i >= n || s[i] != '[') return PYTHON;
    const char *close = memchr(s + i, ']', (size_t)(n - i));
    if (!close) return PYTHON;
    i = close - s + 1;
    if (i >= n || !is_space(s[i])) return PYTHON;
    while (i < n && is_space(s[i])) i++;
    if (i >= n) return PYTHON;  /* a name of whitespace alone (`.+?` takes one): Python's */
    /* The reader: rank + 1 no more than the ranks it knows (then it changes nothing). */
    if (tests_value(s + rank_at, rank_len) + 1 > t->ranks) return PYTHON;
    if (!group) return OK;  /* the Tagger's "main", which it has (F_MAIN) */
    /* The Tagger: "pid N" known, with this pid, a host and the nccl-tests hint. A process found
     * so stays so till Python runs (the scan reads, never changes, the Tagger's processes): a
     * test's device rows name one pid, or one per rank (MPI), which are kept. */
    int found, slot = tests_pid_slot(t, s + pid_at, pid_len, &found);
    if (found) return OK;
    PyObject *processes = tests_attr(t->result, "processes");
    if (!processes) return ERROR;
    char name[4 + TESTS_INT_DIGITS];  /* the tag, "pid N" */
    memcpy(name, "pid ", 4);
    memcpy(name + 4, s + pid_at, (size_t)pid_len);
    PyObject *tag = PyUnicode_FromStringAndSize(name, 4 + pid_len);
    PyObject *p = tag && PyDict_Check(processes) ? PyDict_GetItemWithError(processes, tag) : NULL;
    Py_XDECREF(tag);
    int status = PYTHON;
    if (!p) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
    if (!PyDict_Check(p)) goto done;
    PyObject *pid = PyDict_GetItemString(p, "pid"), *host = PyDict_GetItemString(p, "host");
    PyObject *hints = PyDict_GetItemString(p, "hints");
    if (!pid || !host || !hints || !PyLong_Check(pid) || !PyList_Check(hints)) goto done;
    int overflow;
    long long known = PyLong_AsLongLongAndOverflow(pid, &overflow);
    if (overflow || known != tests_value(s + pid_at, pid_len)) goto done;
    int has_host = PyObject_IsTrue(host);
    if (has_host <= 0) { status = has_host < 0 ? ERROR : PYTHON; goto done; }
    int hinted = PySequence_Contains(hints, self->tests_hint);
    if (hinted <= 0) { status = hinted < 0 ? ERROR : PYTHON; goto done; }
    status = OK;
    if (slot >= 0 && t->device_pids < TESTS_PIDS * 3 / 4) {  /* (past that, the rest are looked up each time) */
        t->device_pids++;
        memcpy(t->device_pid[slot], s + pid_at, (size_t)pid_len);  /* (tests_digits: at most TESTS_INT_DIGITS) */
        t->device_pid_len[slot] = pid_len;
        t->device_slot_stamp[slot] = t->device_stamp;
    }
done:
    Py_DECREF(processes);
    return status;
}

/* The hash of a `#` line's text (idle_slot): its bytes at the start, at 8 (a device row's rank),
 * in the middle and at the end, and its length, mixed. */
static inline uint32_t tests_idle_hash(const char *s, Py_ssize_t n) {
    uint64_t h = (uint64_t)n * 0x9e3779b97f4a7c15ull;
    if (n >= 16) {
        uint64_t a, b, c, d;
        memcpy(&a, s, 8), memcpy(&b, s + 8, 8), memcpy(&c, s + n / 2 - 4, 8), memcpy(&d, s + n - 8, 8);
        h ^= (a + b * 0xc2b2ae3d27d4eb4full) * 0x9e3779b97f4a7c15ull ^ (c + d * 0x165667b19e3779f9ull) * 0xc2b2ae3d27d4eb4full;
    } else {
        for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    }
    h ^= h >> 32;
    return (uint32_t)(h ^ h >> 15);
}

/* Whether s[0:n] was read this scan as a `#` line that changed nothing: its slot (open addressing,
 * slots of another scan empty), *free the empty slot where it would go (-1: not kept, too long). */
static inline int tests_idle_comment(const Tests *t, const char *s, Py_ssize_t n, uint32_t *hash, int *free) {
    *free = -1;
    if (n > TESTS_IDLE_MAX) return 0;
    uint32_t h = *hash = tests_idle_hash(s, n), mask = 2 * TESTS_IDLE - 1;
    for (uint32_t slot = h & mask;; slot = (slot + 1) & mask) {  /* (at most half full: an empty slot ends it) */
        const __typeof__(t->idle_slot[0]) *e = &t->idle_slot[slot];
        if (e->stamp != t->device_stamp) {
            *free = (int)slot;
            return 0;
        }
        if (e->hash == h && e->len == n && memeq(t->idle_text[e->at], s, (size_t)n)) return 1;
    }
}

/* s[0:n] kept as a `#` line that changed nothing this scan, in slot `free` (tests_idle_comment's). */
static void tests_idle_keep(Tests *t, const char *s, Py_ssize_t n, uint32_t hash, int free) {
    if (free < 0 || t->idle_used == TESTS_IDLE) return;
    memcpy(t->idle_text[t->idle_used], s, (size_t)n);
    __typeof__(t->idle_slot[0]) *e = &t->idle_slot[free];
    e->stamp = t->device_stamp, e->hash = hash, e->len = (int)n, e->at = t->idle_used++;
}

/* A line whose readers are the Tagger and nccl_tests (its STARTS) alone. */
static int tests_line(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno, Eagle *e, PyObject *labels,
                      int flags, unsigned rd, unsigned by_literal) {
    /* (its own trigger, `_perf`, only in a `Collective test` line: tests_comment) */
    if (!self->tests || (by_literal & ~BIT(R_NCCL_TESTS)) || (rd & ~(BIT(R_TAGGER) | BIT(R_NCCL_TESTS))) || e->in_block)
        return PYTHON;
    unsigned marks = 0;
    if (s[0] == '#') {
        Tests *t = self->tests;
        int keep = flags & F_MAIN && !by_literal && t->comments_ok, free = -1;
        uint32_t hash = 0;
        if (keep && tests_idle_comment(t, s, n, &hash, &free)) return OK;  /* (read so before this scan) */
        marks = tests_marks(s, n);
        if (marks & TM_PID) {
            if (!keep) return PYTHON;
            int status = tests_device(self, s, n, marks);
            if (status == OK) tests_idle_keep(t, s, n, hash, free);
            return status;
        }
        if (keep) {
            int idle = 0, status = tests_comment(self, s, n, lineno, by_literal, marks, &idle);
            if (status == OK && idle) tests_idle_keep(t, s, n, hash, free);
            return status;
        }
        /* (tagger_tag's "main": a `#` line without "Pid") */
    } else {
        int label;
        int tag = tagger_tag(self, s, n, labels, &label);
        if (tag != TAG_MAIN) return tag < 0 ? ERROR : PYTHON;
    }
    if (!(flags & F_MAIN)) return PYTHON;  /* the Tagger makes "main" of it */
    Py_ssize_t i = 0;
    if (s[0] == ' ' || s[0] == '\t')  /* feed()'s lstrip */
        while (i < n && is_space(s[i])) i++;
    if (i < n && s[i] == '#')
        return tests_comment(self, s, n, lineno, by_literal, s[0] == '#' ? marks : tests_marks(s, n), NULL);
    if (i < n && is_digit(s[i]) && !by_literal) {
        int row = tests_row(self, s, n, lineno);
        /* No row at all (its size is no number): read here where the context watcher takes nothing */
        return row == PYTHON && tests_idle(self->tests, s, n) && !tests_wordy(s, n) ? OK : row;
    }
    return PYTHON;
}

/* `[0-9](_?[0-9])*` at s[*i] (a digitpart of Python's float grammar): whether there is one, *i past it. */
static int tests_digitpart(const char *s, Py_ssize_t n, Py_ssize_t *i) {
    Py_ssize_t j = *i;
    if (j >= n || !is_digit(s[j])) return 0;
    for (j++; j < n;) {
        if (is_digit(s[j])) j++;
        else if (s[j] == '_' && j + 1 < n && is_digit(s[j + 1])) j += 2;
        else break;
    }
    *i = j;
    return 1;
}

/* Whether float() refuses the cell s[0:n] (ASCII, no whitespace, n > 0), the grammar it reads: a
 * sign, then `inf`, `infinity` or `nan` in any case, or digits (single `_` between them), a dot,
 * more digits, an exponent. int(), which _int takes for digits, refuses what this refuses. */
static int tests_refused(const char *s, Py_ssize_t n) {
    Py_ssize_t i = s[0] == '+' || s[0] == '-';
    static const char *WORDS[] = {"inf", "infinity", "nan"};
    for (int w = 0; w < 3; w++) {
        Py_ssize_t k = (Py_ssize_t)strlen(WORDS[w]), j = 0;
        while (j < k && i + j < n && (s[i + j] | 0x20) == WORDS[w][j]) j++;  /* (| 0x20: a letter's lower case) */
        if (j == k && i + k == n) return 0;
    }
    int mantissa = tests_digitpart(s, n, &i);
    if (i < n && s[i] == '.') {
        i++;
        mantissa |= tests_digitpart(s, n, &i);
    }
    if (!mantissa) return 1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (!tests_digitpart(s, n, &i)) return 1;
    }
    return i != n;
}

/* Whether feed() does nothing with `s`, a line whose first non-blank is a digit and that holds no
 * trigger of nccl_tests (tests_in says what state the reader is in): no row is read where no table
 * is open after a header; before any header only a line of 9 or 13 cells may be a row; in a table,
 * a row whose size cell float() refuses is dropped (_int gives None, with no warning): `1st MCA
 * variable: ...`, or a log line led by a date (newer SGLang's `2025-12-04 20:35:53 INFO ...`),
 * which is then another reader's. */
static int tests_idle(const Tests *t, const char *s, Py_ssize_t n) {
    if (!t || !t->idle_mode) return 0;
    if (t->idle_mode == 1) return 1;
    int want = t->idle_mode == 2 ? -1 : t->lay.lead_size, cells = 0;
    for (Py_ssize_t i = 0; i < n;) {
        while (i < n && (is_space(s[i]) || ((unsigned char)s[i] >= 0x1c && (unsigned char)s[i] <= 0x1f))) i++;
        if (i >= n) break;
        Py_ssize_t start = i;
        while (i < n && !(is_space(s[i]) || ((unsigned char)s[i] >= 0x1c && (unsigned char)s[i] <= 0x1f))) {
            if ((unsigned char)s[i] >= 0x80) return 0;  /* str.split() splits on non-ASCII spaces too */
            i++;
        }
        if (cells == want) return tests_refused(s + start, i - start);
        cells++;
    }
    if (t->idle_mode == 2) return cells != 9 && cells != 13;
    return 0;  /* no size cell: _row returns, but leave the short line to Python */
}

/* watch_tests(parser, result, words): the nccl_tests reader whose rows the scanner reads, its
 * result, and the type and op names a row's cells may hold. */
static PyObject *Scanner_watch_tests(Scanner *self, PyObject *args) {
    PyObject *parser, *result, *words;
    if (!PyArg_ParseTuple(args, "OOO", &parser, &result, &words)) return NULL;
    if (not_ready(self)) return NULL;
    PyObject *seq = PySequence_Fast(words, "words: a sequence of str");
    if (!seq) return NULL;
    Py_ssize_t nw = PySequence_Fast_GET_SIZE(seq);
    if (nw > TESTS_MAX_WORDS) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "too many words"); return NULL; }
    Tests *t = self->tests;
    for (int i = 0; i < t->nwords; i++) free(t->word[i]);
    t->nwords = 0;
    for (Py_ssize_t i = 0; i < nw; i++) {
        PyObject *w = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t len;
        const char *text = PyUnicode_Check(w) ? PyUnicode_AsUTF8AndSize(w, &len) : NULL;
        if (!text) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "words: a sequence of str");
            Py_DECREF(seq);
            return NULL;
        }
        /* An identifier of ASCII letters, digits and _ (what dtype.isidentifier() asks of it) */
        int ident = len > 0 && !is_digit(text[0]) && len < 64;
        for (Py_ssize_t k = 0; k < len && ident; k++) ident = is_word(text[k]);
        if (!ident) { Py_DECREF(seq); PyErr_Format(PyExc_ValueError, "%R is not a plain identifier", w); return NULL; }
        if (!(t->word[t->nwords] = malloc((size_t)len + 1))) { Py_DECREF(seq); return PyErr_NoMemory(); }
        memcpy(t->word[t->nwords], text, (size_t)len + 1);
        t->word_len[t->nwords++] = len;
    }
    Py_DECREF(seq);
    Py_INCREF(parser);
    Py_INCREF(result);
    Py_XSETREF(t->parser, parser);
    Py_XSETREF(t->result, result);
    Py_CLEAR(t->table);
    Py_CLEAR(t->headers);
    if ((t->s_oob = intern_str(self, "out_of_bounds_values", 20)) < 0
        || (t->s_avg = intern_str(self, "avg_busbw_gbs", 13)) < 0 || (t->s_source = intern_str(self, "nccl_tests", 10)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Booleans (0/1 ints) as an Arrow bit-packed boolean array ("b"). */
static struct ArrowArray *tests_bool_column(ibuf *b) {
    int64_t n = b->n;
    uint8_t *bits = calloc((size_t)(n + 7) / 8 + 1, 1);
    if (!bits) { PyErr_NoMemory(); return NULL; }
    for (int64_t i = 0; i < n; i++)
        if (b->v[i]) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    b->n = 0;
    return leaf(n, 0, NULL, bits, NULL, 2);
}

/* Ints with a validity column (0: None) as a nullable int64 array. */
static struct ArrowArray *tests_nullable_ints(ibuf *b, ibuf *valid) {
    int64_t n = b->n, nulls = 0;
    uint8_t *bits = NULL;
    for (int64_t i = 0; i < n; i++) nulls += !valid->v[i];
    if (nulls) {
        bits = calloc((size_t)(n + 7) / 8 + 1, 1);
        if (!bits) { PyErr_NoMemory(); return NULL; }
        for (int64_t i = 0; i < n; i++)
            if (valid->v[i]) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    }
    valid->n = 0;
    return leaf(n, nulls, bits, steal((void **)&b->v, &b->n, &b->cap), NULL, 2);
}

static const char *TESTS_COLUMNS[] = {"op", "size_bytes", "count", "dtype", "redop", "root", "time_us", "algbw_gbs",
                                      "busbw_gbs", "wrong", "in_place", "line", "process"};
static const char *TESTS_FORMATS[] = {"vu", "l", "l", "vu", "vu", "l", "g", "g", "g", "l", "b", "l", "vu"};

/* take_collectives() -> the collectives read so far as a Frame (records.Collective's fields but
 * logfile, in their order), or None. */
static PyObject *Scanner_take_collectives(Scanner *self, PyObject *Py_UNUSED(ignored)) {
    if (not_ready(self)) return NULL;
    Tests *t = self->tests;
    int64_t n = t->c_line.n;
    if (!n) Py_RETURN_NONE;
    struct ArrowArray *cols[] = {
        text_column(self, &t->c_op, n, 0), int_column(&t->c_size), int_column(&t->c_count),
        text_column(self, &t->c_dtype, n, 0), text_column(self, &t->c_redop, n, 0), int_column(&t->c_root),
        float_column(&t->c_time, 1), float_column(&t->c_algbw, 1), float_column(&t->c_busbw, 1),
        tests_nullable_ints(&t->c_wrong, &t->c_wrong_valid), tests_bool_column(&t->c_in_place),
        int_column(&t->c_line), text_column(self, &t->c_process, n, 0)};
    /* Every column taken (or freed with the frame that failed): the scanner starts them empty. */
    t->c_op.n = t->c_dtype.n = t->c_redop.n = t->c_process.n = t->c_wrong_valid.n = t->c_in_place.n = 0;
    return frame(n, cols, TESTS_COLUMNS, TESTS_FORMATS, 13);
}

/* add_collectives(collectives): records.Collective objects Python's reader made, after the
 * scanner's own (all or none; a logfile set is refused: the columns hold none). */
static PyObject *Scanner_add_collectives(Scanner *self, PyObject *arg) {
    if (not_ready(self)) return NULL;
    if (!PyList_Check(arg)) { PyErr_SetString(PyExc_TypeError, "a list of Collective"); return NULL; }
    Tests *t = self->tests;
    Py_ssize_t n = PyList_GET_SIZE(arg);
    typedef struct { int64_t op, size, count, dtype, redop, root, wrong, wrong_valid, in_place, line, process;
                     double time, algbw, busbw; } row;
    row *rs = malloc((size_t)(n + 1) * sizeof(row));
    if (!rs) return PyErr_NoMemory();
    static const char *INTS[] = {"size_bytes", "count", "root", "line"};
    static const char *STRS[] = {"op", "dtype", "redop", "process"};
    static const char *FLOATS[] = {"time_us", "algbw_gbs", "busbw_gbs"};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = PyList_GET_ITEM(arg, i);
        row *r = rs + i;
        int64_t *ints[] = {&r->size, &r->count, &r->root, &r->line};
        int64_t *strs[] = {&r->op, &r->dtype, &r->redop, &r->process};
        double *floats[] = {&r->time, &r->algbw, &r->busbw};
        int bad = 0;
        for (int k = 0; k < 4 && !bad; k++) {
            PyObject *v = PyObject_GetAttrString(c, INTS[k]);
            long long x = v ? PyLong_AsLongLong(v) : -1;
            bad = !v || (x == -1 && PyErr_Occurred());
            Py_XDECREF(v);
            *ints[k] = x;
        }
        for (int k = 0; k < 4 && !bad; k++) {
            PyObject *v = PyObject_GetAttrString(c, STRS[k]);
            int s = v ? str_index(self, v) : -1;
            bad = s < 0;
            Py_XDECREF(v);
            *strs[k] = s;
        }
        for (int k = 0; k < 3 && !bad; k++) {
            PyObject *v = PyObject_GetAttrString(c, FLOATS[k]);
            double d = !v ? -1.0 : v == Py_None ? NAN : PyFloat_AsDouble(v);
            bad = !v || (d == -1.0 && PyErr_Occurred()) || (v != Py_None && isnan(d));
            if (!bad && v != Py_None && isnan(d)) PyErr_SetString(PyExc_ValueError, "a NaN is not None");
            Py_XDECREF(v);
            *floats[k] = d;
        }
        if (!bad) {
            PyObject *w = PyObject_GetAttrString(c, "wrong");
            r->wrong_valid = w && w != Py_None;
            r->wrong = r->wrong_valid ? PyLong_AsLongLong(w) : 0;
            bad = !w || (r->wrong == -1 && PyErr_Occurred());
            Py_XDECREF(w);
        }
        if (!bad) {
            PyObject *p = PyObject_GetAttrString(c, "in_place");
            int b = p ? PyObject_IsTrue(p) : -1;
            Py_XDECREF(p);
            r->in_place = b;
            bad = b < 0;
        }
        if (!bad) {
            PyObject *lf = PyObject_GetAttrString(c, "logfile");
            bad = !lf || lf != Py_None;
            if (lf && lf != Py_None) PyErr_SetString(PyExc_ValueError, "a collective with a logfile");
            Py_XDECREF(lf);
        }
        if (bad) { free(rs); return NULL; }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const row *r = rs + i;
        if (ipush(&t->c_op, r->op) < 0 || ipush(&t->c_size, r->size) < 0 || ipush(&t->c_count, r->count) < 0
            || ipush(&t->c_dtype, r->dtype) < 0 || ipush(&t->c_redop, r->redop) < 0 || ipush(&t->c_root, r->root) < 0
            || dpush(&t->c_time, r->time) < 0 || dpush(&t->c_algbw, r->algbw) < 0 || dpush(&t->c_busbw, r->busbw) < 0
            || ipush(&t->c_wrong, r->wrong) < 0 || ipush(&t->c_wrong_valid, r->wrong_valid) < 0
            || ipush(&t->c_in_place, r->in_place) < 0 || ipush(&t->c_line, r->line) < 0
            || ipush(&t->c_process, r->process) < 0) { free(rs); return NULL; }
    }
    free(rs);
    Py_RETURN_NONE;
}
