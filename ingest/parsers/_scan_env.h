/* Lines that name NCCL outside its INFO lines, read in C (included by _scan.c after _scan_nccl.h;
 * native.py binds it with env_bind() after nccl_bind()):
 *
 *     [TP1] pid=1561 environ NCCL_*: NCCL_ALGO=Ring NCCL_PROTO=LL          worker env dump
 *     launcher pid=1559 environ NCCL_*: NCCL_ALGO=Ring NCCL_PROTO=LL      launcher env dump
 *     $ NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=0 python3 launch.py --steps 2    launch prefix
 *     export NCCL_NET="AWS Libfabric"                                     export
 *     NCCL version 2.20.5+cuda12.4                                        bare version (its settings held)
 *     node [0] NCCL INFO Kernel version: 6.8.0                            no reader acts on it
 *
 * A serving log of many launches prints these at each start, and each went through the Tagger,
 * nccl_debug, launch_env and the context watcher in Python. Here a line is read when what those
 * do with it is one of the moves below, made as they make them (processes.Tagger._tag,
 * nccl_debug.Parser.feed, launch_env.Parser.feed and _dump/_command, context.Watcher.offer):
 *   - an env dump (`PREFIX pid=N environ ...: NCCL_K=V ...`, _DUMP) of a process the Tagger knows
 *     with every field the line sets set already (pid, hint, label, rank; the alias of its label
 *     set here): launch_env's records, with the Tagger's tag as stamp() gives it; a launcher's
 *     line is a launch line (appended to launch_lines) and its records declared (declared_by);
 *   - a command launch_env reads (_command): no prompt or a `$ `/`+ ` one, then `export`,
 *     `declare -x`, `env` or an assignment, its words split as shell_words splits them (plain
 *     words or quotes, no escapes); its NCCL_* pairs are declared records of "main" and its other
 *     upper-case names settings already held (set() keeps the first); a `$ `/`+ ` line naming
 *     python/serve/launch/torchrun/mpirun is a launch line;
 *   - a bare `NCCL version X.Y.Z` line once the settings it sets are held (marked used);
 *   - any other line of these readers' on which none of them acts (the Tagger tags it "main").
 * and, in every case, offered to the watcher (_scan_context.h). Every check is made before any
 * change; a line of any other shape -- an MPI tag, a `(`, `[date TPn]` or `#` start, an NCCL head
 * anywhere (host:pid:tid [dev]), a conf file, an RCCL version, launch flags (-x/-e/--env),
 * escapes, a setting not held yet, a process unknown -- goes to Python (DECLINE: read_line goes
 * on with it as before).
 */

struct env_fast {
    PyObject *launch_lines, *declared_by;  /* the Tagger's */
    PyObject *hint_launcher, *hint_worker, *main;  /* processes.LAUNCHER, WORKER, MAIN */
    PyObject *k_hints, *k_label, *k_alias, *format;  /* "hints", "label", "alias", launch_env.NAME */
    PyObject *k_declared, *src_launcher, *src_worker, *src_prefix, *src_export, *src_env_dump;
    /* per scan call: 0 not read yet, 1 read, -1 unreadable (the lines go back) */
    int fetched;
    PyObject *nccl, *settings, *processes, *offer;  /* result.nccl, .settings, .processes, .offer */
    int has_format;  /* launch_env.NAME is among the formats: add_format() adds nothing */
    struct env_cmd *cmd;  /* env_command's words, made at the first use */
};

static void env_free(struct nccl_fast *f) {
    struct env_fast *v = f->env;
    if (!v) return;
    PyObject **refs[] = {&v->launch_lines, &v->declared_by, &v->hint_launcher, &v->hint_worker, &v->main, &v->k_hints,
                         &v->k_label, &v->k_alias, &v->format, &v->k_declared, &v->src_launcher, &v->src_worker,
                         &v->src_prefix, &v->src_export, &v->src_env_dump, &v->nccl, &v->settings, &v->processes,
                         &v->offer};
    for (size_t i = 0; i < sizeof(refs) / sizeof(*refs); i++) Py_CLEAR(*refs[i]);
    free(v->cmd);
    free(v);
    f->env = NULL;
}

static void env_enter(struct nccl_fast *f) {
    if (f->env) f->env->fetched = 0;
}

/* env_bind(tagger, watcher, max_candidates, (launcher, worker), main, launch_env_name): read the lines
 * above for this parse's Tagger (after nccl_bind()); `watcher`, the parse's context.Watcher whose
 * offer is result.offer (or None: result.offer is called), MAX_CANDIDATES its cap. */
static PyObject *Scanner_env_bind(Scanner *self, PyObject *args) {
    PyObject *tagger, *watcher, *launcher, *worker, *main, *name;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "OOn(UU)UU", &tagger, &watcher, &most, &launcher, &worker, &main, &name)) return NULL;
    if (not_ready(self)) return NULL;
    struct nccl_fast *f = self->nccl;
    if (!f) {
        PyErr_SetString(PyExc_RuntimeError, "env_bind() comes after nccl_bind()");
        return NULL;
    }
    if (most < 0) {
        PyErr_SetString(PyExc_ValueError, "max_candidates is a count");
        return NULL;
    }
    PyObject *lines = PyObject_GetAttrString(tagger, "launch_lines");
    PyObject *declared = lines ? PyObject_GetAttrString(tagger, "declared_by") : NULL;
    if (!lines || !declared || !PyList_CheckExact(lines) || !PySet_CheckExact(declared)) {
        Py_XDECREF(lines); Py_XDECREF(declared);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "the Tagger's launch_lines and declared_by: a list, a set");
        return NULL;
    }
    env_free(f);
    context_clear(&f->ctx);
    struct env_fast *v = calloc(1, sizeof(*v));
    if (!v) {
        Py_DECREF(lines); Py_DECREF(declared);
        return PyErr_NoMemory();
    }
    f->env = v;
    v->launch_lines = lines, v->declared_by = declared;
    Py_INCREF(launcher); Py_INCREF(worker); Py_INCREF(main); Py_INCREF(name);
    v->hint_launcher = launcher, v->hint_worker = worker, v->main = main, v->format = name;
    v->k_hints = PyUnicode_InternFromString("hints");
    v->k_label = PyUnicode_InternFromString("label");
    v->k_alias = PyUnicode_InternFromString("alias");
    v->k_declared = PyUnicode_InternFromString("declared");
    v->src_launcher = PyUnicode_InternFromString("launcher env dump");
    v->src_worker = PyUnicode_InternFromString("worker env dump");
    v->src_prefix = PyUnicode_InternFromString("launch prefix");
    v->src_export = PyUnicode_InternFromString("export");
    v->src_env_dump = PyUnicode_InternFromString("env dump");
    if (!v->k_hints || !v->k_label || !v->k_alias || !v->k_declared || !v->src_launcher || !v->src_worker
        || !v->src_prefix || !v->src_export || !v->src_env_dump) {
        env_free(f);
        return NULL;
    }
    if (watcher != Py_None) {
        Py_INCREF(watcher);
        f->ctx.watcher = watcher, f->ctx.max = most;
    }
    Py_RETURN_NONE;
}

/* The result's lists and dicts for this scan call: 1, or 0 when they are not what they should be. */
static int env_fetch(struct nccl_fast *f, struct env_fast *v) {
    v->fetched = -1;
    Py_XSETREF(v->nccl, PyObject_GetAttrString(f->result, "nccl"));
    Py_XSETREF(v->settings, PyObject_GetAttrString(f->result, "settings"));
    Py_XSETREF(v->processes, PyObject_GetAttrString(f->result, "processes"));
    Py_XSETREF(v->offer, PyObject_GetAttrString(f->result, "offer"));
    PyObject *formats = PyObject_GetAttrString(f->result, "formats");
    int has = formats && PyList_CheckExact(formats) ? PySequence_Contains(formats, v->format) : -1;
    Py_XDECREF(formats);
    if (has < 0 || !v->nccl || !v->settings || !v->processes || !v->offer || !PyList_CheckExact(v->nccl)
        || !PyDict_CheckExact(v->settings) || !PyDict_CheckExact(v->processes)) {
        PyErr_Clear();
        return 0;
    }
    v->has_format = has;
    v->fetched = 1;
    return 1;
}

/* ---- what the line holds ------------------------------------------------------------------- */

/* `:\d+:\d+ \[\d+\] ` somewhere: a piece of every match of nccl_debug._LINE and the Tagger's _NCCL
 * (without it neither can match, and the line is in neither's remembered lines). */
static int env_head_anywhere(const char *s, Py_ssize_t n) {
    for (const char *p = s; (p = memchr(p, ':', (size_t)(n - (p - s)))); p++) {
        Py_ssize_t i = p - s + 1, j = nccl_digits(s, n, i);
        if (j == i || j >= n || s[j] != ':') continue;
        i = j + 1, j = nccl_digits(s, n, i);
        if (j == i || j + 2 > n || s[j] != ' ' || s[j + 1] != '[') continue;
        i = j + 2, j = nccl_digits(s, n, i);
        if (j > i && j + 2 <= n && s[j] == ']' && s[j + 1] == ' ') return 1;
    }
    return 0;
}

/* Case-blind "launcher" in s[0:n] (`"launcher" in prefix.lower()`). */
static int env_has_launcher(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i + 8 <= n; i++)
        if (ctx_starts_ci(s + i, n - i, "launcher", 8)) return 1;
    return 0;
}

/* `\b` + s[i:] starts with lit + `\d+` + `\b` (within s[0:n]): the end of the digits, else -1. */
static Py_ssize_t env_word_number(const char *s, Py_ssize_t n, Py_ssize_t i, const char *lit, Py_ssize_t k) {
    if ((i > 0 && is_word(s[i - 1])) || !starts_len(s + i, n - i, lit, k)) return -1;
    Py_ssize_t j = nccl_digits(s, n, i + k);
    return j > i + k && (j == n || !is_word(s[j])) ? j : -1;
}

/* launch_env._dump's rank name of a worker's prefix: _TP (`\bTP(\d+)\b`), else _RANK
 * (`\brank[= ](\d+)\b`): *at..*end, 0 for none. */
static int env_dump_rank(const char *s, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *end) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = env_word_number(s, n, i, "TP", 2);
        if (j >= 0) { *at = i + 2, *end = j; return 1; }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = env_word_number(s, n, i, "rank=", 5);
        if (j < 0) j = env_word_number(s, n, i, "rank ", 5);
        if (j >= 0) { *at = i + 5, *end = j; return 1; }
    }
    return 0;
}

#define ENV_NAME_MAX 256  /* a label's text (the Tagger's labels joined): longer goes to Python */

/* The Tagger's label of a dump's prefix: _LABEL.findall (`\b((?:DP|TP|EP|PP)\d+)\b`) joined by
 * spaces into out (NUL-ended): its length, 0 for none, -1 when longer than ENV_NAME_MAX. */
static Py_ssize_t env_labels(const char *s, Py_ssize_t n, char *out) {
    Py_ssize_t len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char a = s[i], b = i + 1 < n ? s[i + 1] : 0;
        if (b != 'P' || (a != 'D' && a != 'T' && a != 'E' && a != 'P')) continue;
        Py_ssize_t j = env_word_number(s, n, i, s + i, 2);  /* (the two letters are the literal) */
        if (j < 0) continue;
        if (len + (len > 0) + (j - i) >= ENV_NAME_MAX) return -1;
        if (len) out[len++] = ' ';
        memcpy(out + len, s + i, (size_t)(j - i));
        len += j - i;
        i = j - 1;  /* findall goes on after the match */
    }
    out[len] = 0;
    return len;
}

/* _DUMP_PAIR (`(NCCL_[A-Z0-9_]+)=(\S+)`) from i in s[0:n]: 1 with the key's end and the value's
 * span, 0 when none is left. (The name's class holds no '=' and \S+ runs to a space: one way each.) */
static int env_next_pair(const char *s, Py_ssize_t n, Py_ssize_t *i, Py_ssize_t *key, Py_ssize_t *key_end,
                         Py_ssize_t *value_end) {
    for (Py_ssize_t k = *i; k + 5 < n; k++) {
        if (s[k] != 'N' || !starts_len(s + k, n - k, "NCCL_", 5)) continue;
        Py_ssize_t j = ctx_name_end(s, n, k + 5);
        if (j == k + 5 || j + 1 >= n || s[j] != '=' || is_space(s[j + 1])) continue;
        Py_ssize_t e = j + 1;
        while (e < n && !is_space(s[e])) e++;
        *key = k, *key_end = j, *value_end = e, *i = e;
        return 1;
    }
    return 0;
}

/* Whether launch_env.feed finds a launch flag on a line holding "NCCL_": its test (` -x`, ` -e` or
 * `--env` on the line), then a match of _FLAG, `-(?<!\S-)(?<!declare\s-)(?:x|e|-env)[\s=]+
 * (NCCL_[A-Z0-9_]+)=("[^"]*"|'[^']*'|\S+)`: a '-' first or after a space (not `declare -`), one
 * of the names, a run of spaces and '=' (maximal: "NCCL_" takes neither), the name, '=' and a
 * value (each of its forms starts with a character that is no space). */
static int env_has_flag(const char *s, Py_ssize_t n) {
    if (!find(s, n, " -x", 3) && !find(s, n, " -e", 3) && !find(s, n, "--env", 5)) return 0;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        if (s[i] != '-' || (i > 0 && !is_space(s[i - 1]))) continue;
        if (i >= 8 && is_space(s[i - 1]) && memeq(s + i - 8, "declare", 7)) continue;
        Py_ssize_t j = i + 1;
        if (s[j] == 'x' || s[j] == 'e') j++;
        else if (starts_len(s + j, n - j, "-env", 4)) j += 4;
        else continue;
        Py_ssize_t k = j;
        while (k < n && (is_space(s[k]) || s[k] == '=')) k++;
        if (k == j || !starts_len(s + k, n - k, "NCCL_", 5)) continue;
        Py_ssize_t e = ctx_name_end(s, n, k + 5);
        if (e > k + 5 && e + 1 < n && s[e] == '=' && !is_space(s[e + 1])) return 1;
    }
    return 0;
}

/* ---- launch_env._command ---------------------------------------------------------------------- */

#define ENV_TEXT_MAX 8192  /* a command's text read here: longer goes to Python */
#define ENV_WORDS 512

typedef struct {
    char buf[ENV_TEXT_MAX];  /* the words, unquoted */
    Py_ssize_t at[ENV_WORDS], len[ENV_WORDS];
    int count;
} env_words_t;

static inline int env_split_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* shell_words(t[0:n]) as launch_env reads them: str.split() of plain words, or, with quotes alone
 * (no escape, no \v \f \x1c-\x1f), the words _SHELL_WORD finds with each quoted part's quotes off
 * (a quote opens a part closed by the next of its kind, as _QUOTED pairs them). 1, or 0 where
 * Python must read them (an escape or an odd space: shlex; a quote never closed: shell_words
 * gives None; too long or too many). */
static int env_words(const char *t, Py_ssize_t n, env_words_t *w) {
    if (n > ENV_TEXT_MAX) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = t[i];
        if (c == '\\' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f)) return 0;
    }
    Py_ssize_t i = 0, out = 0;
    w->count = 0;
    for (;;) {
        while (i < n && env_split_space(t[i])) i++;
        if (i >= n) return 1;
        if (w->count == ENV_WORDS) return 0;
        w->at[w->count] = out;
        while (i < n && !env_split_space(t[i])) {
            char c = t[i];
            if (c == '"' || c == '\'') {
                const char *close = memchr(t + i + 1, c, (size_t)(n - i - 1));
                if (!close) return 0;
                Py_ssize_t k = close - (t + i + 1);
                memcpy(w->buf + out, t + i + 1, (size_t)k);
                out += k;
                i += k + 2;
            } else {
                w->buf[out++] = c;
                i++;
            }
        }
        w->len[w->count] = out - w->at[w->count];
        w->count++;
    }
}

/* _ASSIGNMENT (`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`): the key's length (its '=' follows), 0 for none. */
static Py_ssize_t env_assignment(const char *s, Py_ssize_t n) {
    if (n == 0 || !(is_word(s[0]) && !is_digit(s[0]))) return 0;
    Py_ssize_t k = 1;
    while (k < n && is_word(s[k])) k++;
    return k < n && s[k] == '=' ? k : 0;
}

/* key.isupper() and not _SECRET.search(key), for a key of [A-Za-z0-9_]. */
static int env_public_upper(const char *k, Py_ssize_t n) {
    int upper = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (k[i] >= 'a' && k[i] <= 'z') return 0;
        if (k[i] >= 'A' && k[i] <= 'Z') upper = 1;
    }
    if (!upper) return 0;
    static const char *secret[] = {"TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH"};
    for (size_t j = 0; j < sizeof(secret) / sizeof(*secret); j++)
        if (find(k, n, secret[j], (Py_ssize_t)strlen(secret[j]))) return 0;
    for (Py_ssize_t i = 0; i + 3 <= n; i++)  /* (?:^|_)KEY(?:$|_) */
        if (memeq(k + i, "KEY", 3) && (i == 0 || k[i - 1] == '_') && (i + 3 == n || k[i + 3] == '_')) return 0;
    return 1;
}

enum { CMD_NOTHING, CMD_PAIRS, CMD_PYTHON };

typedef struct env_cmd {
    env_words_t w;
    int first;  /* the first word of the pairs */
    int pairs;  /* how many words from `first` are assignments */
    int source;  /* 0 launch prefix, 1 export, 2 env dump */
} env_cmd;

/* What launch_env.feed does with a line that is no env dump and names no launch flag: nothing,
 * the pairs of its _command (c), or CMD_PYTHON where that is not read here. */
static int env_command(const char *s, Py_ssize_t n, int has_nccl_, env_cmd *c) {
    char c0 = s[0];
    /* feed(): without "NCCL_", _command only for these first characters */
    if (!has_nccl_ && !(c0 == '$' || c0 == '+' || c0 == '(' || (c0 >= 'A' && c0 <= 'Z') || starts(s, n, "export")
                        || starts(s, n, "env ")))
        return CMD_NOTHING;
    Py_ssize_t a = 0, b = n;  /* line.strip() */
    while (a < b && is_space(s[a])) a++;
    while (b > a && is_space(s[b - 1])) b--;
    if (a == b) return CMD_NOTHING;
    const char *t = s + a;
    Py_ssize_t tn = b - a, p = 0;
    int prompt = 0;
    /* _PROMPT: `(..)` tags and `[user@host dir]$` are Python's; `$ `/`+ `; `user@host:dir$` (a word, then '@') */
    if (t[0] == '(' || t[0] == '[') return CMD_PYTHON;
    if (t[0] == '$' || t[0] == '+') {
        if (tn > 1 && is_space(t[1])) {
            prompt = 1, p = 1;
            while (p < tn && is_space(t[p])) p++;
        }  /* else no prompt, and _START finds no `$`/`+` first: nothing */
    } else {
        Py_ssize_t r = 0;
        while (r < tn && (is_word(t[r]) || t[r] == '.' || t[r] == '-')) r++;
        if (r > 0 && r < tn && t[r] == '@') return CMD_PYTHON;
    }
    t += p, tn -= p;
    /* _START: `(?:export|declare -x|env)\s+` or an assignment */
    int word = (starts(t, tn, "export") && tn > 6 && is_space(t[6])) || (starts(t, tn, "env") && tn > 3 && is_space(t[3]))
        || (starts(t, tn, "declare -x") && tn > 10 && is_space(t[10]));
    if (!word && !env_assignment(t, tn)) return CMD_NOTHING;
    if (!env_words(t, tn, &c->w)) return CMD_PYTHON;
    env_words_t *w = &c->w;
    int first = 0, source = 0;
    if (w->count) {
        const char *w0 = w->buf + w->at[0];
        Py_ssize_t l0 = w->len[0];
        if ((l0 == 6 && memeq(w0, "export", 6)) || (l0 == 7 && memeq(w0, "declare", 7))) {
            source = 1, first = l0 == 7 ? 2 : 1;
        } else if (l0 == 3 && memeq(w0, "env", 3)) {
            first = 1;
        }
    }
    int pairs = 0;
    for (int k = first; k < w->count && env_assignment(w->buf + w->at[k], w->len[k]); k++) pairs++;
    if (!pairs) return CMD_NOTHING;
    /* `NCCL_X=Y` alone on a line: `env`/`printenv` output */
    if (source == 0 && w->count - first == 1 && !prompt) source = 2;
    c->first = first, c->pairs = pairs, c->source = source;
    return CMD_PAIRS;
}

/* ---- the moves ---------------------------------------------------------------------------- */

/* record(key, value, kind, line, source, rank, None, process) appended to result.nccl: 0, -1 on error. */
static int env_record(struct nccl_fast *f, struct env_fast *v, const char *key, Py_ssize_t kn, const char *value,
                      Py_ssize_t vn, PyObject *kind, PyObject *at, PyObject *source, PyObject *rank, PyObject *process) {
    PyObject *k = PyUnicode_DecodeASCII(key, kn, NULL), *val = k ? PyUnicode_DecodeASCII(value, vn, NULL) : NULL;
    PyObject *rec = NULL;
    if (val) {
        PyObject *argv[8] = {k, val, kind, at, source, rank, Py_None, process};
        rec = PyObject_Vectorcall(f->record, argv, 8, NULL);
    }
    int bad = !rec || PyList_Append(v->nccl, rec) < 0;
    Py_XDECREF(k); Py_XDECREF(val); Py_XDECREF(rec);
    return bad ? -1 : 0;
}

/* A hint list holding `hint` (the Tagger's _hint adds nothing): 1, 0 not so, -1 on error. */
static int env_hinted(struct env_fast *v, PyObject *p, PyObject *hint) {
    PyObject *hints = PyDict_GetItemWithError(p, v->k_hints);
    if (!hints) return PyErr_Occurred() ? -1 : 0;
    if (!PyList_CheckExact(hints)) return 0;
    return PySequence_Contains(hints, hint);
}

/* An env dump: `s[0:at]` the prefix, its pid s[at+4:pid_end], its pairs from `body`. */
static int env_dump(struct nccl_fast *f, struct env_fast *v, const char *s, Py_ssize_t n, PyObject *line,
                    int64_t lineno, Py_ssize_t at, Py_ssize_t pid_end, Py_ssize_t body) {
    Py_ssize_t digits = pid_end - at - 4;
    if (digits > NCCL_INT_DIGITS) return PYTHON;  /* read_int() may warn */
    char name[ENV_NAME_MAX + 1];
    memcpy(name, "pid ", 4);
    memcpy(name + 4, s + at + 4, (size_t)digits);
    PyObject *tag = PyUnicode_DecodeASCII(name, 4 + digits, NULL), *label = NULL, *rank = NULL, *lineobj = NULL;
    if (!tag) return ERROR;
    int status = ERROR, launcher = env_has_launcher(s, at);
    PyObject *p = PyDict_GetItemWithError(v->processes, tag), *alias = NULL;
    if (!p || !PyDict_CheckExact(p)) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
    /* _tag: p["pid"] = the pid (held already), its hint */
    PyObject *pid = PyDict_GetItemWithError(p, f->k_pid);
    if (!pid || !PyLong_CheckExact(pid)) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
    long long want = 0, held;
    for (Py_ssize_t k = at + 4; k < pid_end; k++) want = want * 10 + (s[k] - '0');
    int overflow;
    held = PyLong_AsLongLongAndOverflow(pid, &overflow);
    if (held == -1 && PyErr_Occurred()) goto done;
    if (overflow || held != want) { status = PYTHON; goto done; }
    int hinted = env_hinted(v, p, launcher ? v->hint_launcher : v->hint_worker);
    if (hinted <= 0) { status = hinted < 0 ? ERROR : PYTHON; goto done; }
    Py_ssize_t ra = 0, re = 0;
    if (!launcher) {
        /* _tag: the label (held), the rank (held, or none to give), the label's alias (set below) */
        Py_ssize_t len = env_labels(s, at, name);
        if (len < 0) { status = PYTHON; goto done; }
        if (len > 0) {
            if (!(label = PyUnicode_DecodeASCII(name, len, NULL))) goto done;
            PyObject *held_label = PyDict_GetItemWithError(p, v->k_label);
            if (!held_label) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
            int same = PyUnicode_CheckExact(held_label) ? PyUnicode_Compare(held_label, label) : 1;
            if (same == -1 && PyErr_Occurred()) goto done;
            if (same != 0) { status = PYTHON; goto done; }
            PyObject *r = PyDict_GetItemWithError(p, f->k_rank);
            if (!r) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
            int tp = 0;  /* re.search(r"TP(\d+)", name) */
            for (Py_ssize_t k = 0; k + 2 < len && !tp; k++) tp = name[k] == 'T' && name[k + 1] == 'P' && is_digit(name[k + 2]);
            int kept = (PyUnicode_CheckExact(r) && PyUnicode_GET_LENGTH(r) > 0) || (r == Py_None && !tp);
            if (!kept) { status = PYTHON; goto done; }
            alias = PyDict_GetItemWithError(v->processes, label);
            if (!alias || !PyDict_CheckExact(alias)) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
        }
        /* launch_env._dump: the records' rank */
        if (env_dump_rank(s, at, &ra, &re)) {
            if (!(rank = PyUnicode_DecodeASCII(s + ra, re - ra, NULL))) goto done;
        } else {
            rank = tag;
            Py_INCREF(rank);
        }
    }
    Py_ssize_t i = body, key, key_end, value_end;
    int pairs = env_next_pair(s, n, &i, &key, &key_end, &value_end);
    if ((!launcher || pairs) && !v->has_format) { status = PYTHON; goto done; }  /* add_format() adds it */
    /* every check is passed: the moves */
    if (alias && PyDict_SetItem(alias, v->k_alias, tag) < 0) goto done;
    if (!(lineobj = PyLong_FromLongLong((long long)lineno))) goto done;
    if (launcher && PyList_Append(v->launch_lines, lineobj) < 0) goto done;
    for (i = body; env_next_pair(s, n, &i, &key, &key_end, &value_end);) {
        if (env_record(f, v, s + key, key_end - key, s + key_end + 1, value_end - key_end - 1,
                       launcher ? v->k_declared : f->k_effective, lineobj, launcher ? v->src_launcher : v->src_worker,
                       launcher ? f->k_empty : rank, tag) < 0)
            goto done;
    }
    if (launcher && pairs && PySet_Add(v->declared_by, tag) < 0) goto done;  /* as stamp() adds a declared record's */
    status = context_offer(&f->ctx, v->offer, s, n, line, lineno, 1) < 0 ? ERROR : OK;
done:
    Py_DECREF(tag);
    Py_XDECREF(label); Py_XDECREF(rank); Py_XDECREF(lineobj);
    return status;
}

/* `NCCL version X.Y.Z...` first on the line (nccl_debug._version, bare): the settings it sets are
 * held; then only its line is marked used. 1 read so, 0 Python's. */
static int env_bare_version(struct nccl_fast *f, const char *s, Py_ssize_t n) {
    if (f->fetched == 0 && !nccl_fetch(f)) return 0;
    if (f->fetched < 0) return 0;
    return nccl_version_held(f, s, n);
}

/* A line of the Tagger, nccl_debug and launch_env alone (no other reader's literal or start): what
 * they and the watcher do with it, or DECLINE. */
static int env_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, Eagle *e, int flags,
                    unsigned rd) {
    struct nccl_fast *f = self->nccl;
    struct env_fast *v = f ? f->env : NULL;
    if (!v || n == 0 || e->in_block || rd & ~(BIT(R_TAGGER) | BIT(R_NCCL_DEBUG) | BIT(R_LAUNCH_ENV))) return DECLINE;
    char c = s[0];
    /* the Tagger: a vLLM tag, an nccl-tests row, a SGLang prefix, an NCCL head; a `$x` or `+x` first
     * (_LAUNCH_CMD's other branch); ServerArgs */
    if (c == '(' || c == '#' || is_space(c) || ((c == '$' || c == '+') && (n < 2 || !is_space(s[1])))) return DECLINE;
    Py_ssize_t t0, t1;
    if (c == '[' && sglang_prefix(s, n, &t0, &t1) && t1 > t0) return DECLINE;
    if (env_head_anywhere(s, n) || find(s, n, "server_args=ServerArgs(", 23)) return DECLINE;
    /* nccl_debug: a conf file, an RCCL version (the library set again), a bare version read below */
    if (find(s, n, "NCCL_CONF_FILE", 14) || find(s, n, "nccl.conf", 9)
        || (find(s, n, "RCCL version", 12) && find(s, n, " NCCL INFO ", 11)))
        return DECLINE;
    if (v->fetched == 0 && !env_fetch(f, v)) return DECLINE;
    if (v->fetched < 0) return DECLINE;
    int wanted = (rd & ~BIT(R_TAGGER)) != 0;  /* a format reader's literal or start: the Watcher's wanted() */
    int has_nccl_ = find(s, n, "NCCL_", 5) != NULL;
    int launch = (rd & BIT(R_LAUNCH_ENV)) != 0;
    if (find(s, n, "environ", 7) && find(s, n, "pid=", 4)) {
        /* _DUMP: the first `\bpid=\d+ environ\b`, then launch_env's `[^:]*:\s*(.*)$` */
        for (Py_ssize_t i = 0; i + 4 <= n; i++) {
            if (s[i] != 'p' || (i > 0 && is_word(s[i - 1])) || !starts_len(s + i, n - i, "pid=", 4)) continue;
            Py_ssize_t d = nccl_digits(s, n, i + 4);
            if (d == i + 4 || !starts_len(s + d, n - d, " environ", 8) || (d + 8 < n && is_word(s[d + 8]))) continue;
            const char *colon = memchr(s + d + 8, ':', (size_t)(n - d - 8));
            if (!colon || !launch || !has_nccl_ || !wanted) return DECLINE;
            Py_ssize_t body = colon - s + 1;
            while (body < n && is_space(s[body])) body++;
            int r = env_dump(f, v, s, n, line, lineno, i, d, body);
            return r == PYTHON ? DECLINE : r;
        }
        return DECLINE;  /* no dump: the Tagger and launch_env go on down their branches */
    }
    if (!(flags & F_MAIN)) return DECLINE;  /* the Tagger makes "main" of it */
    /* launch_env: an env dump was ruled out; with "NCCL_", launch flags are Python's */
    if (launch && has_nccl_ && env_has_flag(s, n)) return DECLINE;
    env_cmd *cmd = v->cmd;
    int what = CMD_NOTHING;
    if (launch) {
        if (!cmd && !(cmd = v->cmd = malloc(sizeof(*cmd)))) { PyErr_NoMemory(); return ERROR; }
        what = env_command(s, n, has_nccl_, cmd);
    }
    int status = DECLINE, version = 0;
    PyObject *lineobj = NULL, *key = NULL;
    if (what == CMD_PYTHON) goto done;
    /* nccl_debug: a bare version (`^NCCL version \d`), read once its settings are held */
    if (rd & BIT(R_NCCL_DEBUG) && starts(s, n, "NCCL version ") && n > 13 && is_digit(s[13])) {
        if (!env_bare_version(f, s, n)) goto done;
        version = 1;
    }
    int records = 0;
    if (what == CMD_PAIRS) {
        /* set() of a name held already changes nothing; a new one is Python's to set */
        env_words_t *w = &cmd->w;
        for (int k = cmd->first; k < cmd->first + cmd->pairs; k++) {
            const char *word = w->buf + w->at[k];
            Py_ssize_t kl = env_assignment(word, w->len[k]);
            if (kl >= 5 && memeq(word, "NCCL_", 5)) {
                records += w->len[k] > kl + 1;  /* an empty value is unset */
                continue;
            }
            if (cmd->source == 2 || !env_public_upper(word, kl)) continue;
            if (!v->has_format) goto done;
            if (kl > ENV_NAME_MAX - 4) goto done;
            char name[ENV_NAME_MAX];
            memcpy(name, "env.", 4);
            memcpy(name + 4, word, (size_t)kl);
            Py_XSETREF(key, PyUnicode_DecodeASCII(name, 4 + kl, NULL));  /* f"env.{key}" */
            if (!key) { status = ERROR; goto done; }
            int held = PyDict_Contains(v->settings, key);
            if (held <= 0) { status = held < 0 ? ERROR : DECLINE; goto done; }
        }
        if (records && !v->has_format) goto done;
    }
    /* every check is passed: the moves, in the readers' order */
    status = ERROR;
    if (!(lineobj = PyLong_FromLongLong((long long)lineno))) goto done;
    if ((c == '$' || c == '+') && (find(s + 2, n - 2, "python", 6) || find(s + 2, n - 2, "serve", 5)
                                   || find(s + 2, n - 2, "launch", 6) || find(s + 2, n - 2, "torchrun", 8)
                                   || find(s + 2, n - 2, "mpirun", 6))
        && PyList_Append(v->launch_lines, lineobj) < 0)  /* _LAUNCH_CMD */
        goto done;
    if (version && PySet_Add(f->used, lineobj) < 0) goto done;
    if (records) {
        env_words_t *w = &cmd->w;
        PyObject *source = cmd->source == 1 ? v->src_export : cmd->source == 2 ? v->src_env_dump : v->src_prefix;
        for (int k = cmd->first; k < cmd->first + cmd->pairs; k++) {
            const char *word = w->buf + w->at[k];
            Py_ssize_t kl = env_assignment(word, w->len[k]);
            if (kl < 5 || !memeq(word, "NCCL_", 5) || w->len[k] == kl + 1) continue;
            if (env_record(f, v, word, kl, word + kl + 1, w->len[k] - kl - 1, v->k_declared, lineobj, source,
                           f->k_empty, v->main) < 0)
                goto done;
        }
        if (PySet_Add(v->declared_by, v->main) < 0) goto done;
    }
    if (context_offer(&f->ctx, v->offer, s, n, line, lineno, wanted) < 0) goto done;
    status = OK;
done:
    Py_XDECREF(lineobj); Py_XDECREF(key);
    return status;
}
