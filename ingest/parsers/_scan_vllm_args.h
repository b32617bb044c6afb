/* vLLM's `non-default args: {...}` lines in the native scanner (vllm.Parser._args, the reference).
 *
 * vLLM (>= 0.9) prints its launch arguments as a dict repr once a start; the parser reads it with
 * ast.literal_eval and sets first-wins settings from a few fields (vllm._ARGS), which a log's first
 * such line has set. native.py arms this part once a parse (vllm_args_arm) with vllm._ARGS' field ->
 * setting names. vllm_line (_scan_vllm.h) hands a line here that holds vLLM's `non-default args`
 * literal and none of the literals whose branches vllm.Parser.feed takes before it. It is read here
 * when
 *   - the text from the first `{` after the literal to the line's end is, but for trailing spaces,
 *     a dict in this small part of Python's literal grammar (else Python reads it, whatever it is):
 *     str keys; values that are strings ('...' or "..." of printable ASCII, no backslash), ints of at
 *     most 18 digits without a leading zero, decimals `-?d+.d+`, True, False, None, lists and dicts of
 *     those (16 deep at most); single spaces or none between tokens, no trailing comma;
 *   - `vllm_args` is among the result's formats and `engine` set (_args' first records are Python's),
 *     every field of vllm._ARGS the dict holds has its setting set already (a first-wins set of it
 *     changes nothing, whatever its value), and it holds no `speculative_config` (its draft length is
 *     the launch's: Python's);
 * and then what _args changes is _new_launch's (a launch that used its draft length ends: launch_k,
 * launch_used, v0_previous reset). */

#define ARGS_FIELDS 16
#define ARGS_DEPTH 16

struct args_state {
    int armed, lit;  /* lit: vLLM's `non-default args` literal (-1: none) */
    struct { char name[40]; Py_ssize_t len; PyObject *setting; } field[ARGS_FIELDS];  /* vllm._ARGS */
    int nfield;
    PyObject *k_result, *k_formats, *k_settings, *name;  /* "result", "formats", "settings", "vllm_args" */
};

static void args_release(struct args_state *a) {
    if (!a) return;
    for (int i = 0; i < a->nfield; i++) Py_CLEAR(a->field[i].setting);
    Py_CLEAR(a->k_result);
    Py_CLEAR(a->k_formats);
    Py_CLEAR(a->k_settings);
    Py_CLEAR(a->name);
    free(a);
}

/* vllm_args_arm(fields: {field: setting name}): once a parse, after vllm_arm (native.parse_chunks). */
static PyObject *Scanner_vllm_args_arm(Scanner *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    PyObject *fields;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &fields)) return NULL;
    if (PyDict_GET_SIZE(fields) > ARGS_FIELDS) { PyErr_SetString(PyExc_ValueError, "too many fields"); return NULL; }
    struct vllm_state *v = vllm_state_of(self);
    if (!v) return NULL;
    args_release(v->args);
    struct args_state *a = v->args = calloc(1, sizeof(*a));
    if (!a) { PyErr_NoMemory(); return NULL; }
    a->lit = -1;
    for (int k = 0; k < self->nlit; k++)
        if (self->lit_reader[k] == R_VLLM && self->lit_len[k] == 16 && memeq(self->lit[k], "non-default args", 16))
            a->lit = k;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(fields, &pos, &key, &value)) {
        Py_ssize_t len;
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &len) : NULL;
        if (!name || !PyUnicode_CheckExact(value)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "fields map a str to a str");
            return NULL;
        }
        if (len >= (Py_ssize_t)sizeof(a->field[0].name)) { PyErr_SetString(PyExc_ValueError, "a field name too long"); return NULL; }
        memcpy(a->field[a->nfield].name, name, (size_t)len);
        a->field[a->nfield].len = len;
        Py_INCREF(value);
        a->field[a->nfield++].setting = value;
    }
    a->k_result = PyUnicode_InternFromString("result");
    a->k_formats = PyUnicode_InternFromString("formats");
    a->k_settings = PyUnicode_InternFromString("settings");
    a->name = PyUnicode_InternFromString("vllm_args");
    if (!a->k_result || !a->k_formats || !a->k_settings || !a->name) return NULL;
    a->armed = 1;
    Py_RETURN_NONE;
}

static uint64_t args_literal(const Scanner *self) {
    const struct args_state *a = self->vllm ? self->vllm->args : NULL;
    return a && a->armed && a->lit >= 0 ? 1ull << a->lit : 0;
}

static void args_spaces(const char *s, Py_ssize_t n, Py_ssize_t *i) {
    while (*i < n && s[*i] == ' ') (*i)++;
}

/* A string of the grammar read here at s[*i], moved past: its text's place and length, 0 when none. */
static int args_string(const char *s, Py_ssize_t n, Py_ssize_t *i, Py_ssize_t *at, Py_ssize_t *len) {
    if (*i >= n || (s[*i] != '\'' && s[*i] != '"')) return 0;
    char quote = s[*i];
    Py_ssize_t j = *i + 1;
    while (j < n && s[j] != quote) {
        if (s[j] < 0x20 || s[j] > 0x7e || s[j] == '\\') return 0;
        j++;
    }
    if (j >= n) return 0;
    *at = *i + 1, *len = j - *i - 1, *i = j + 1;
    return 1;
}

/* A token that ends a value: what may follow one (`,`, `:`, `]`, `}`, a space, the end). */
static int args_ends(const char *s, Py_ssize_t n, Py_ssize_t i) {
    return i >= n || s[i] == ',' || s[i] == ':' || s[i] == ']' || s[i] == '}' || s[i] == ' ';
}

/* `-?(0|[1-9]d*)(.d+)?` at s[*i], at most 18 digits before the point, moved past: 0 when none. */
static int args_number(const char *s, Py_ssize_t n, Py_ssize_t *i) {
    Py_ssize_t j = *i;
    if (j < n && s[j] == '-') j++;
    Py_ssize_t d = j;
    while (j < n && is_digit(s[j])) j++;
    if (j == d || j - d > 18 || (s[d] == '0' && j - d > 1)) return 0;
    if (j < n && s[j] == '.') {
        Py_ssize_t f = ++j;
        while (j < n && is_digit(s[j])) j++;
        if (j == f || j - f > 18) return 0;
    }
    if (!args_ends(s, n, j)) return 0;
    *i = j;
    return 1;
}

static int args_value(const char *s, Py_ssize_t n, Py_ssize_t *i, int depth);

/* The dict at s[*i] ({ seen), moved past its `}`: 1, 0 when not of the grammar. Each key's place and
 * length go to keys[] (at most `room` of them; 0 when more) where `keys` is not NULL. */
static int args_dict(const char *s, Py_ssize_t n, Py_ssize_t *i, int depth, Py_ssize_t (*keys)[2], int room,
                     int *nkeys) {
    Py_ssize_t j = *i + 1;
    int count = 0;
    args_spaces(s, n, &j);
    if (j < n && s[j] == '}') { *i = j + 1; if (nkeys) *nkeys = 0; return 1; }
    for (;;) {
        Py_ssize_t at, len;
        if (!args_string(s, n, &j, &at, &len)) return 0;
        if (keys) {
            if (count == room) return 0;
            keys[count][0] = at, keys[count][1] = len;
        }
        count++;
        args_spaces(s, n, &j);
        if (j >= n || s[j] != ':') return 0;
        j++;
        args_spaces(s, n, &j);
        if (!args_value(s, n, &j, depth + 1)) return 0;
        args_spaces(s, n, &j);
        if (j < n && s[j] == '}') break;
        if (j >= n || s[j] != ',') return 0;
        j++;
        args_spaces(s, n, &j);
    }
    *i = j + 1;
    if (nkeys) *nkeys = count;
    return 1;
}

/* A value of the grammar at s[*i], moved past: 1, 0 when not of it. */
static int args_value(const char *s, Py_ssize_t n, Py_ssize_t *i, int depth) {
    if (depth > ARGS_DEPTH || *i >= n) return 0;
    char c = s[*i];
    if (c == '{') return args_dict(s, n, i, depth, NULL, 0, NULL);
    if (c == '[') {
        Py_ssize_t j = *i + 1;
        args_spaces(s, n, &j);
        if (j < n && s[j] == ']') { *i = j + 1; return 1; }
        for (;;) {
            if (!args_value(s, n, &j, depth + 1)) return 0;
            args_spaces(s, n, &j);
            if (j < n && s[j] == ']') break;
            if (j >= n || s[j] != ',') return 0;
            j++;
            args_spaces(s, n, &j);
        }
        *i = j + 1;
        return 1;
    }
    if (c == '\'' || c == '"') {
        Py_ssize_t at, len;
        return args_string(s, n, i, &at, &len);
    }
    static const char *words[] = {"True", "False", "None"};
    for (int k = 0; k < 3; k++) {
        Py_ssize_t len = (Py_ssize_t)strlen(words[k]);
        if (starts_len(s + *i, n - *i, words[k], len) && args_ends(s, n, *i + len)) {
            *i += len;
            return 1;
        }
    }
    return args_number(s, n, i);
}

/* Whether `name` is among the result's formats (1, 0; -1 on error), its settings in *settings. */
static int args_result(struct args_state *a, PyObject *parser, PyObject **settings) {
    *settings = NULL;
    PyObject *result = PyObject_GetAttr(parser, a->k_result);
    if (!result) return -1;
    PyObject *formats = PyObject_GetAttr(result, a->k_formats);
    *settings = formats ? PyObject_GetAttr(result, a->k_settings) : NULL;
    Py_DECREF(result);
    if (!*settings) { Py_XDECREF(formats); return -1; }
    int has = PyList_CheckExact(formats) && PyDict_CheckExact(*settings) ? PySequence_Contains(formats, a->name) : 0;
    Py_DECREF(formats);
    if (has <= 0) Py_CLEAR(*settings);
    return has;
}

/* vllm.Parser._new_launch: 0, -1 on error, 1 where launch_used is no bool (Python's). */
static int args_new_launch(PyObject *parser) {
    PyObject *used = PyObject_GetAttrString(parser, "launch_used");
    if (!used) return -1;
    int is_true = used == Py_True, is_bool = PyBool_Check(used);
    Py_DECREF(used);
    if (!is_bool) return 1;
    if (!is_true) return 0;
    if (PyObject_SetAttrString(parser, "launch_k", Py_None) < 0 || PyObject_SetAttrString(parser, "launch_used", Py_False) < 0
        || PyObject_SetAttrString(parser, "v0_previous", Py_None) < 0) return -1;
    return 0;
}

/* A line vllm_line found the `non-default args` literal on, feed()'s branch for it taken: 1 read
 * (the parser's writes done), 0 for Python, -1 on error. */
static int args_line(Scanner *self, PyObject *parser, const char *s, Py_ssize_t n, int flags) {
    struct args_state *a = self->vllm ? self->vllm->args : NULL;
    if (!a || !a->armed || !(flags & F_ENGINE)) return 0;
    const char *at = find(s, n, "non-default args", 16);
    const char *open = at ? memchr(at, '{', (size_t)(s + n - at)) : NULL;
    if (!open) return 0;
    Py_ssize_t i = open - s, keys[ARGS_FIELDS * 4][2];
    int nkeys;
    if (!args_dict(s, n, &i, 0, keys, ARGS_FIELDS * 4, &nkeys)) return 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;  /* .strip() */
    if (i < n) return 0;
    for (int k = 0; k < nkeys; k++)
        if (keys[k][1] == 18 && memeq(s + keys[k][0], "speculative_config", 18)) return 0;
    PyObject *settings;
    int seen = args_result(a, parser, &settings);
    if (seen <= 0) return seen;
    int unset = 0;
    for (int k = 0; k < nkeys && !unset; k++)
        for (int f = 0; f < a->nfield; f++) {
            if (a->field[f].len != keys[k][1] || !memeq(s + keys[k][0], a->field[f].name, (size_t)keys[k][1])) continue;
            int has = PyDict_Contains(settings, a->field[f].setting);
            if (has < 0) { Py_DECREF(settings); return -1; }
            unset |= !has;
        }
    Py_DECREF(settings);
    if (unset) return 0;  /* a first set: Python's */
    int got = args_new_launch(parser);
    return got < 0 ? -1 : got == 0;
}
