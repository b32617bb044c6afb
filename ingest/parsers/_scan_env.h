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
 *     set here), or of a process new to it (made here as _process makes it, with its label's
 *     alias): launch_env's records, with the Tagger's tag as stamp() gives it; a launcher's line is
 *     a launch line (appended to launch_lines) and its records declared (declared_by);
 *   - launch flags (`mpirun -x NCCL_K=V`, `-e`, `--env`: _FLAG, values as _shell_value gives them)
 *     and a command launch_env reads (_command): a prompt (_PROMPT: `(venv)` tags, `[u@h d]$`,
 *     `u@h:d#`, `$ `, `+ `) or none, then `export`, `declare -x`, `env` or an assignment, its words
 *     split as shell_words splits them (shlex's quotes and escapes); their NCCL_* pairs are
 *     declared records of "main" and its other upper-case names settings already held (set()
 *     keeps the first); a `$ `/`+ ` line naming python/serve/launch/torchrun/mpirun is a launch line;
 *   - a bare `NCCL version X.Y.Z` line once the settings it sets are held (marked used);
 *   - any other line of these readers' on which none of them acts (the Tagger tags it "main");
 *   - on these lines, nccl_tests' command naming a test's binary (op_command set, its setting held)
 *     and SGLang's name: none of its lines, or a launch command whose settings are all held.
 * and, in every case, offered to the watcher (_scan_context.h). Every check is made before any
 * change; a line of any other shape -- an MPI tag, a vLLM `(Name pid=N)` tag, a `[date TPn]` or
 * `#` start, an NCCL head anywhere (host:pid:tid [dev]), a conf file, an RCCL version, an odd space
 * (\v \f \x1c-\x1f) in a command, a setting not held yet, another reader's literal or start --
 * goes to Python (DECLINE: read_line goes on with it as before).
 */

#define ENV_STRS 256  /* the record strings kept (env_str): direct-mapped by their hash */
#define ENV_STR_MAX 64  /* a longer key or value is decoded each time */

struct env_fast {
    PyObject *launch_lines, *declared_by;  /* the Tagger's */
    PyObject *hint_launcher, *hint_worker, *main;  /* processes.LAUNCHER, WORKER, MAIN */
    PyObject *k_hints, *k_label, *k_alias, *format;  /* "hints", "label", "alias", launch_env.NAME */
    PyObject *k_declared, *src_launcher, *src_worker, *src_prefix, *src_export, *src_env_dump, *src_flag;
    PyObject *k_tests_command, *k_op_command, *k_first_line;  /* "nccl_tests.command", "op_command", "first_line" */
    PyObject *k_engine, *k_sglang_launch;  /* "engine", "sglang_launch" */
    PyObject *resolve, *resolved;  /* sglang._resolve_flag (or None), and what it gave each flag asked */
    /* per scan call: 0 not read yet, 1 read, -1 unreadable (the lines go back) */
    int fetched;
    PyObject *nccl, *settings, *processes, *offer;  /* result.nccl, .settings, .processes, .offer */
    int has_format;  /* launch_env.NAME is among the formats: add_format() adds nothing */
    int has_sglang_launch;  /* and "sglang_launch" */
    struct env_cmd *cmd;  /* env_command's words, made at the first use */
    /* The str of a record's key or value, by its text (env_str): a start-up names the same few
     * keys and values in every dump and launch line, each decoded once, not twice a record. */
    struct { uint64_t hash; Py_ssize_t len; PyObject *str; } strs[ENV_STRS];
};

static void env_free(struct nccl_fast *f) {
    struct env_fast *v = f->env;
    if (!v) return;
    PyObject **refs[] = {&v->launch_lines, &v->declared_by, &v->hint_launcher, &v->hint_worker, &v->main, &v->k_hints,
                         &v->k_label, &v->k_alias, &v->format, &v->k_declared, &v->src_launcher, &v->src_worker,
                         &v->src_prefix, &v->src_export, &v->src_env_dump, &v->src_flag, &v->k_tests_command,
                         &v->k_op_command, &v->k_first_line, &v->k_engine, &v->k_sglang_launch, &v->resolve,
                         &v->resolved, &v->nccl,
                         &v->settings, &v->processes, &v->offer};
    for (size_t i = 0; i < sizeof(refs) / sizeof(*refs); i++) Py_CLEAR(*refs[i]);
    for (int i = 0; i < ENV_STRS; i++) Py_CLEAR(v->strs[i].str);
    free(v->cmd);
    free(v);
    f->env = NULL;
}

static void env_enter(struct nccl_fast *f) {
    if (f->env) f->env->fetched = 0;
}

/* env_bind(tagger, watcher, max_candidates, (launcher, worker), main, launch_env_name[, resolve_flag]):
 * read the lines above for this parse's Tagger (after nccl_bind()); `watcher`, the parse's
 * context.Watcher whose offer is result.offer (or None: result.offer is called), MAX_CANDIDATES its
 * cap; `resolve_flag`, sglang._resolve_flag (without it, SGLang's launch commands are Python's). */
static PyObject *Scanner_env_bind(Scanner *self, PyObject *args) {
    PyObject *tagger, *watcher, *launcher, *worker, *main, *name, *resolve = Py_None;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "OOn(UU)UU|O", &tagger, &watcher, &most, &launcher, &worker, &main, &name, &resolve))
        return NULL;
    if (resolve != Py_None && !PyCallable_Check(resolve)) {
        PyErr_SetString(PyExc_TypeError, "resolve_flag: sglang._resolve_flag, or None");
        return NULL;
    }
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
    context_clear(f->ctx);
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
    v->src_flag = PyUnicode_InternFromString("launch flag");
    v->k_tests_command = PyUnicode_InternFromString("nccl_tests.command");
    v->k_op_command = PyUnicode_InternFromString("op_command");
    v->k_first_line = PyUnicode_InternFromString("first_line");
    v->k_engine = PyUnicode_InternFromString("engine");
    v->k_sglang_launch = PyUnicode_InternFromString("sglang_launch");
    v->resolved = PyErr_Occurred() ? NULL : PyDict_New();
    Py_INCREF(resolve);
    v->resolve = resolve;
    if (!v->k_hints || !v->k_label || !v->k_alias || !v->k_declared || !v->src_launcher || !v->src_worker
        || !v->src_prefix || !v->src_export || !v->src_env_dump || !v->src_flag || !v->k_tests_command
        || !v->k_op_command || !v->k_first_line || !v->k_engine || !v->k_sglang_launch || !v->resolved) {
        env_free(f);
        return NULL;
    }
    if (watcher != Py_None) {
        Py_INCREF(watcher);
        f->ctx->watcher = watcher, f->ctx->max = most;
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
    int sglang = has >= 0 ? PySequence_Contains(formats, v->k_sglang_launch) : -1;
    Py_XDECREF(formats);
    if (has < 0 || sglang < 0 || !v->nccl || !v->settings || !v->processes || !v->offer || !PyList_CheckExact(v->nccl)
        || !PyDict_CheckExact(v->settings) || !PyDict_CheckExact(v->processes)) {
        PyErr_Clear();
        return 0;
    }
    v->has_format = has, v->has_sglang_launch = sglang;
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

/* The next match of launch_env._FLAG from *i in s[0:n], as findall walks the line (a match ends
 * where the next search starts): `-(?<!\S-)(?<!declare\s-)(?:x|e|-env)[\s=]+(NCCL_[A-Z0-9_]+)=
 * ("[^"]*"|'[^']*'|\S+)`: a '-' first or after whitespace (not `declare -`), one of the names, a run
 * of whitespace and '=' (maximal: "NCCL_" takes neither), the name (maximal: '=' must follow), '='
 * and a value: a quoted part where its quote closes on the line, else a run of non-whitespace
 * (each alternative starts with a character the others' cannot take back, so one way each). 1 with
 * the name's span and the value's (*quoted: its quotes are in it), 0 when none is left. */
static int env_next_flag(const char *s, Py_ssize_t n, Py_ssize_t *i, Py_ssize_t *key, Py_ssize_t *key_end,
                         Py_ssize_t *value, Py_ssize_t *value_end, int *quoted) {
    for (Py_ssize_t p = *i; p + 1 < n; p++) {
        if (s[p] != '-' || (p > 0 && !is_space(s[p - 1]))) continue;
        if (p >= 8 && memeq(s + p - 8, "declare", 7)) continue;  /* (s[p - 1] is whitespace) */
        Py_ssize_t j = p + 1;
        if (s[j] == 'x' || s[j] == 'e') j++;
        else if (starts_len(s + j, n - j, "-env", 4)) j += 4;
        else continue;
        Py_ssize_t k = j;
        while (k < n && (is_space(s[k]) || s[k] == '=')) k++;
        if (k == j || !starts_len(s + k, n - k, "NCCL_", 5)) continue;
        Py_ssize_t e = ctx_name_end(s, n, k + 5), v = e + 1;
        if (e == k + 5 || v >= n || s[e] != '=') continue;
        const char *close = s[v] == '"' || s[v] == '\'' ? memchr(s + v + 1, s[v], (size_t)(n - v - 1)) : NULL;
        Py_ssize_t end = v;
        if (close) {
            end = close - s + 1;
        } else {
            while (end < n && !is_space(s[end])) end++;
            if (end == v) continue;
        }
        *key = k, *key_end = e, *value = v, *value_end = end, *quoted = close != NULL, *i = end;
        return 1;
    }
    return 0;
}

/* launch_env._shell_value of a flag's value s[0:n] into out (n bytes at most): a quoted value without
 * its quotes, else each `\x` (_ESCAPED: `\\(.)`, left to right) as x. Its length. (A value of \S+
 * never starts and ends with one quote: its quote would have closed a quoted value.) */
static Py_ssize_t env_flag_value(const char *s, Py_ssize_t n, int quoted, char *out) {
    if (quoted) {
        memcpy(out, s + 1, (size_t)(n - 2));
        return n - 2;
    }
    Py_ssize_t len = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (s[k] == '\\' && k + 1 < n) k++;  /* (no line holds the '\n' `.` leaves) */
        out[len++] = s[k];
    }
    return len;
}

/* Whether launch_env.feed looks for launch flags (its test before _FLAG.findall). */
static int env_flag_test(const char *s, Py_ssize_t n) {
    return find(s, n, " -x", 3) || find(s, n, " -e", 3) || find(s, n, "--env", 5);
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

enum { SPLIT_SHLEX, SPLIT_PLAIN, SPLIT_UNQUOTE };

/* The words of t[0:n] into w: SPLIT_SHLEX as shlex.split gives them (posix, no comments; its
 * whitespace ' \t\r\n', the line's other whitespace refused before): a word runs to whitespace
 * outside quotes; outside quotes `\x` is x, in "..." a `\` escapes only `"` and `\` (else both
 * stay), in '...' nothing; SPLIT_PLAIN as str.split() gives them, SPLIT_UNQUOTE each of those
 * without a pair of quotes around it (_unquote). 1, 0 too many words, -1 where shlex raises
 * ValueError (a quote never closed, a `\` with nothing after). A word is never longer than its
 * text, so w->buf (n <= ENV_TEXT_MAX) holds them. */
static int env_split(const char *t, Py_ssize_t n, env_words_t *w, int how) {
    Py_ssize_t i = 0, out = 0;
    w->count = 0;
    for (;;) {
        while (i < n && env_split_space(t[i])) i++;
        if (i >= n) return 1;
        if (w->count == ENV_WORDS) return 0;
        w->at[w->count] = out;
        if (how != SPLIT_SHLEX) {
            Py_ssize_t a = i;
            while (i < n && !env_split_space(t[i])) i++;
            Py_ssize_t b = i;
            if (how == SPLIT_UNQUOTE && b - a >= 2 && t[a] == t[b - 1] && (t[a] == '"' || t[a] == '\'')) a++, b--;
            memcpy(w->buf + out, t + a, (size_t)(b - a));
            out += b - a;
        }
        while (how == SPLIT_SHLEX && i < n && !env_split_space(t[i])) {
            char c = t[i];
            if (c == '\\') {
                if (i + 1 >= n) return -1;
                w->buf[out++] = t[i + 1];
                i += 2;
            } else if (c == '\'') {
                const char *close = memchr(t + i + 1, c, (size_t)(n - i - 1));
                if (!close) return -1;
                Py_ssize_t k = close - (t + i + 1);
                memcpy(w->buf + out, t + i + 1, (size_t)k);
                out += k;
                i += k + 2;
            } else if (c == '"') {
                for (i++;; i++) {
                    if (i >= n) return -1;
                    if (t[i] == '"') break;
                    if (t[i] == '\\') {
                        if (i + 1 >= n) return -1;
                        if (t[i + 1] != '\\' && t[i + 1] != '"') w->buf[out++] = '\\';
                        i++;
                    }
                    w->buf[out++] = t[i];
                }
                i++;
            } else {
                w->buf[out++] = c;
                i++;
            }
        }
        w->len[w->count] = out - w->at[w->count];
        w->count++;
    }
}

/* launch_env._words(t[0:n]) (shell_words: shlex.split's words, and where it raises, str.split()'s
 * words, each without a pair of quotes around it where `unquote`: _unquote; sglang's launch words
 * keep them). 1, or 0 where Python must read them: \v \f \x1c-\x1f (str.split() splits there,
 * shlex does not: rare), too long or too many. */
static int env_words(const char *t, Py_ssize_t n, env_words_t *w, int unquote) {
    if (n > ENV_TEXT_MAX) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = t[i];
        if (c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f)) return 0;
    }
    int r = env_split(t, n, w, SPLIT_SHLEX);
    return r >= 0 ? r : env_split(t, n, w, unquote ? SPLIT_UNQUOTE : SPLIT_PLAIN);
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
#define ENV_FLAGS 64  /* launch flags a line's moves take from its check; past them the line is searched again */

typedef struct env_cmd {
    env_words_t w;
    int first;  /* the first word of the pairs */
    int pairs;  /* how many words from `first` are assignments */
    int source;  /* 0 launch prefix, 1 export, 2 env dump */
    char value[ENV_TEXT_MAX];  /* a launch flag's value, _shell_value's */
    /* the line's launch flags found by the check before the moves (their first ENV_FLAGS): the
     * name's and the value's spans, whether the value is quoted */
    Py_ssize_t flag[ENV_FLAGS][4];
    int flag_quoted[ENV_FLAGS];
    env_words_t launch;  /* an SGLang launch command's words */
} env_cmd;

static inline int env_host_char(char c) { return is_word(c) || c == '.' || c == '-'; }

/* launch_env._PROMPT at t[0:n] (a stripped line): the end of its match, 0 for none.
 *   ^(?:\((?:[^()]|\([^()]*\))*\)\s*)*                        `(venv) ` tags
 *    (?:\[[\w.-]+@[\w.-]+(?: [^\]]*)?\][#$]\s*               `[user@host dir]$ `
 *      |[\w.-]+@[\w.-]+:\S*?[#$]\s*                           `user@host:dir# `
 *      |[$+]\s+)                                              `$ `, `+ `
 * One way each: a tag's parts are told apart by their parens (a tag not closed ends the tags, and
 * then a '(' is next, which no prompt starts with: no match); the alternatives by their first
 * character; each class run stops at a character it cannot hold that must follow it; `\S*?[#$]`
 * takes the first '#' or '$' before whitespace. */
static Py_ssize_t env_prompt(const char *t, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n && t[i] == '(') {
        Py_ssize_t j = i + 1;
        while (j < n && t[j] != ')') {
            if (t[j] == '(') {
                j++;
                while (j < n && t[j] != '(' && t[j] != ')') j++;
                if (j >= n || t[j] != ')') return 0;
            }
            j++;
        }
        if (j >= n) return 0;
        i = j + 1;
        while (i < n && is_space(t[i])) i++;
    }
    if (i >= n) return 0;
    Py_ssize_t j = i + 1;
    if (t[i] == '$' || t[i] == '+') {
        if (j >= n || !is_space(t[j])) return 0;
    } else {
        int bracket = t[i] == '[';
        Py_ssize_t k = i + bracket;
        j = k;
        while (j < n && env_host_char(t[j])) j++;
        if (j == k || j >= n || t[j] != '@') return 0;
        k = ++j;
        while (j < n && env_host_char(t[j])) j++;
        if (j == k || j >= n) return 0;
        if (bracket) {
            if (t[j] == ' ') {
                const char *close = memchr(t + j, ']', (size_t)(n - j));
                if (!close) return 0;
                j = close - t;
            }
            if (t[j] != ']') return 0;
            j++;
        } else {
            if (t[j] != ':') return 0;
            while (++j < n && !is_space(t[j]) && t[j] != '#' && t[j] != '$') {}
        }
        if (j >= n || (t[j] != '#' && t[j] != '$')) return 0;
        j++;
    }
    while (j < n && is_space(t[j])) j++;
    return j;
}

/* What launch_env.feed does with a line that is no env dump: nothing, the pairs of its _command
 * (c), or CMD_PYTHON where that is not read here. */
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
    Py_ssize_t tn = b - a, p = env_prompt(t, tn);
    int prompt = p > 0;
    t += p, tn -= p;
    /* _START: `(?:export|declare -x|env)\s+` or an assignment */
    int word = (starts(t, tn, "export") && tn > 6 && is_space(t[6])) || (starts(t, tn, "env") && tn > 3 && is_space(t[3]))
        || (starts(t, tn, "declare -x") && tn > 10 && is_space(t[10]));
    if (!word && !env_assignment(t, tn)) return CMD_NOTHING;
    if (!env_words(t, tn, &c->w, 1)) return CMD_PYTHON;
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

/* A hash of s[0:n] (n > 0) for env_str: its first and last 8 bytes (or each byte of a shorter one)
 * and its length, mixed by multiplying. */
static inline uint64_t env_str_hash(const char *s, Py_ssize_t n) {
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
    } else {
        for (Py_ssize_t i = 0; i < n; i++) a = a << 8 | (unsigned char)s[i];
    }
    uint64_t h = (a ^ (uint64_t)n) * 0x9e3779b97f4a7c15ull ^ b * 0xc2b2ae3d27d4eb4full;
    return h ^ h >> 29;
}

/* The str of ASCII s[0:n], a new reference: the one kept for that text (the same text, compared
 * whole), else decoded and kept in its slot. */
static PyObject *env_str(struct env_fast *v, const char *s, Py_ssize_t n) {
    if (n == 0 || n > ENV_STR_MAX) return PyUnicode_DecodeASCII(s, n, NULL);
    uint64_t h = env_str_hash(s, n);
    __typeof__(v->strs[0]) *slot = &v->strs[h & (ENV_STRS - 1)];
    if (slot->str && slot->hash == h && slot->len == n && memeq(PyUnicode_1BYTE_DATA(slot->str), s, (size_t)n))
        return Py_NewRef(slot->str);
    PyObject *str = PyUnicode_DecodeASCII(s, n, NULL);
    if (!str) return NULL;
    Py_XSETREF(slot->str, Py_NewRef(str));
    slot->hash = h, slot->len = n;
    return str;
}

/* record(key, value, kind, line, source, rank, None, process) appended to result.nccl: 0, -1 on error. */
static int env_record(struct nccl_fast *f, struct env_fast *v, const char *key, Py_ssize_t kn, const char *value,
                      Py_ssize_t vn, PyObject *kind, PyObject *at, PyObject *source, PyObject *rank, PyObject *process) {
    PyObject *k = env_str(v, key, kn), *val = k ? env_str(v, value, vn) : NULL;
    PyObject *rec = NULL;
    if (val) {
        PyObject *argv[NCCL_VALUE_FIELDS] = {k, val, kind, at, source, rank, Py_None, process};
        rec = nccl_value(f, argv);
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

/* A process dict as Tagger._process makes it, with the fields _tag sets at once: a new reference. */
static PyObject *env_process(struct nccl_fast *f, struct env_fast *v, PyObject *pid, PyObject *rank, PyObject *label,
                             PyObject *at, PyObject *hint) {
    PyObject *p = PyDict_New(), *hints = hint ? PyList_New(1) : PyList_New(0);
    if (hints && hint) PyList_SET_ITEM(hints, 0, Py_NewRef(hint));
    if (!p || !hints || PyDict_SetItem(p, f->k_pid, pid) < 0 || PyDict_SetItem(p, f->k_host, Py_None) < 0
        || PyDict_SetItem(p, f->k_rank, rank) < 0 || PyDict_SetItem(p, v->k_label, label) < 0
        || PyDict_SetItem(p, v->k_first_line, at) < 0 || PyDict_SetItem(p, v->k_hints, hints) < 0
        || PyDict_SetItem(p, v->k_alias, Py_None) < 0)
        Py_CLEAR(p);
    Py_XDECREF(hints);
    return p;
}

/* An env dump: `s[0:at]` the prefix, its pid s[at+4:pid_end], its pairs from `body`. The Tagger's
 * moves (_tag): a process it knows with every field the line sets set already, or a new one (made
 * here as _process makes it, its label's alias too where that is new). */
static int env_dump(struct nccl_fast *f, struct env_fast *v, const char *s, Py_ssize_t n, PyObject *line,
                    int64_t lineno, Py_ssize_t at, Py_ssize_t pid_end, Py_ssize_t body) {
    Py_ssize_t digits = pid_end - at - 4;
    if (digits > NCCL_INT_DIGITS) return PYTHON;  /* read_int() may warn */
    char name[ENV_NAME_MAX + 1];
    memcpy(name, "pid ", 4);
    memcpy(name + 4, s + at + 4, (size_t)digits);
    PyObject *tag = PyUnicode_DecodeASCII(name, 4 + digits, NULL), *label = NULL, *rank = NULL, *lineobj = NULL;
    if (!tag) return ERROR;
    PyObject *pid = NULL, *new_rank = NULL, *fresh = NULL, *fresh_alias = NULL;
    int status = ERROR, launcher = env_has_launcher(s, at);
    long long want = 0;
    for (Py_ssize_t k = at + 4; k < pid_end; k++) want = want * 10 + (s[k] - '0');
    PyObject *p = PyDict_GetItemWithError(v->processes, tag), *alias = NULL;
    if (!p && PyErr_Occurred()) goto done;
    if (p && !PyDict_CheckExact(p)) { status = PYTHON; goto done; }
    if (p) {
        /* _tag: p["pid"] = the pid (held already), its hint */
        PyObject *held_pid = PyDict_GetItemWithError(p, f->k_pid);
        if (!held_pid || !PyLong_CheckExact(held_pid)) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
        int overflow;
        long long held = PyLong_AsLongLongAndOverflow(held_pid, &overflow);
        if (held == -1 && PyErr_Occurred()) goto done;
        if (overflow || held != want) { status = PYTHON; goto done; }
        int hinted = env_hinted(v, p, launcher ? v->hint_launcher : v->hint_worker);
        if (hinted <= 0) { status = hinted < 0 ? ERROR : PYTHON; goto done; }
    }
    Py_ssize_t ra = 0, re = 0;
    if (!launcher) {
        /* _tag: the label (held), the rank (held, or none to give), the label's alias (set below) */
        Py_ssize_t len = env_labels(s, at, name);
        if (len < 0) { status = PYTHON; goto done; }
        if (len > 0) {
            if (!(label = PyUnicode_DecodeASCII(name, len, NULL))) goto done;
            Py_ssize_t tp = -1;  /* re.search(r"TP(\d+)", name) */
            for (Py_ssize_t k = 0; k + 2 < len && tp < 0; k++)
                if (name[k] == 'T' && name[k + 1] == 'P' && is_digit(name[k + 2])) tp = k + 2;
            if (p) {
                PyObject *held_label = PyDict_GetItemWithError(p, v->k_label);
                if (!held_label) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
                int same = PyUnicode_CheckExact(held_label) ? PyUnicode_Compare(held_label, label) : 1;
                if (same == -1 && PyErr_Occurred()) goto done;
                if (same != 0) { status = PYTHON; goto done; }
                PyObject *r = PyDict_GetItemWithError(p, f->k_rank);
                if (!r) { status = PyErr_Occurred() ? ERROR : PYTHON; goto done; }
                int kept = (PyUnicode_CheckExact(r) && PyUnicode_GET_LENGTH(r) > 0) || (r == Py_None && tp < 0);
                if (!kept) { status = PYTHON; goto done; }
            } else if (tp >= 0) {
                Py_ssize_t e = tp;
                while (e < len && is_digit(name[e])) e++;
                if (!(new_rank = PyUnicode_DecodeASCII(name + tp, e - tp, NULL))) goto done;
            }
            alias = PyDict_GetItemWithError(v->processes, label);
            if (!alias && PyErr_Occurred()) goto done;
            if (alias ? !PyDict_CheckExact(alias) : p != NULL) { status = PYTHON; goto done; }  /* (a known
                process's label has its alias process made with it) */
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
    if (!(lineobj = PyLong_FromLongLong((long long)lineno))) goto done;
    if (!p) {
        if (!(pid = PyLong_FromLongLong(want))) goto done;
        fresh = env_process(f, v, pid, new_rank ? new_rank : Py_None, label ? label : Py_None, lineobj,
                            launcher ? v->hint_launcher : v->hint_worker);
        if (!fresh || PyDict_SetItem(v->processes, tag, fresh) < 0) goto done;
        if (label && !alias) {
            fresh_alias = env_process(f, v, Py_None, Py_None, Py_None, lineobj, NULL);
            if (!fresh_alias || PyDict_SetItem(v->processes, label, fresh_alias) < 0) goto done;
            alias = fresh_alias;
        }
    }
    if (alias && PyDict_SetItem(alias, v->k_alias, tag) < 0) goto done;
    if (launcher && PyList_Append(v->launch_lines, lineobj) < 0) goto done;
    for (i = body; env_next_pair(s, n, &i, &key, &key_end, &value_end);) {
        if (env_record(f, v, s + key, key_end - key, s + key_end + 1, value_end - key_end - 1,
                       launcher ? v->k_declared : f->k_effective, lineobj, launcher ? v->src_launcher : v->src_worker,
                       launcher ? f->k_empty : rank, tag) < 0)
            goto done;
    }
    if (launcher && pairs && PySet_Add(v->declared_by, tag) < 0) goto done;  /* as stamp() adds a declared record's */
    status = context_offer(f->ctx, v->offer, s, n, line, lineno, 1) < 0 ? ERROR : OK;
done:
    Py_DECREF(tag);
    Py_XDECREF(label); Py_XDECREF(rank); Py_XDECREF(lineobj);
    Py_XDECREF(pid); Py_XDECREF(new_rank); Py_XDECREF(fresh); Py_XDECREF(fresh_alias);
    return status;
}

/* `NCCL version X.Y.Z...` first on the line (nccl_debug._version, bare): the settings it sets are
 * held; then only its line is marked used. 1 read so, 0 Python's. */
static int env_bare_version(struct nccl_fast *f, const char *s, Py_ssize_t n) {
    if (f->fetched == 0 && !nccl_fetch(f)) return 0;
    if (f->fetched < 0) return 0;
    return nccl_version_held(f, s, n);
}

enum { SG_PYTHON, SG_IDLE, SG_LAUNCH };

/* sglang.Parser.feed on a line whose only literal of its own is `sglang` and that opens no block
 * (no STARTS of BlockReader's, a reader not busy): its one branch there is a launch command,
 * `"sglang" in line and _LAUNCH.search(line)`, _LAUNCH being `\bsglang(?:\.launch_server\b
 * |\.bench_one_batch\b|\.bench_offline_throughput\b|\.bench_latency\b|\s+serve\b)`. SG_IDLE where
 * it does nothing (no such match), SG_LAUNCH a launch command (env_sglang_launch), SG_PYTHON another
 * literal of sglang's. */
static int env_sglang_idle(const Scanner *self, const char *s, Py_ssize_t n, uint64_t lits) {
    for (int k = 0; k < self->nlit; k++)
        if (lits >> k & 1 && self->lit_reader[k] == R_SGLANG && !(self->lit_len[k] == 6 && memeq(self->lit[k], "sglang", 6)))
            return SG_PYTHON;
    static const char *const ENTRIES[] = {".launch_server", ".bench_one_batch", ".bench_offline_throughput", ".bench_latency"};
    for (const char *p = s; (p = find(p, n - (p - s), "sglang", 6)); p++) {
        Py_ssize_t i = p - s, j = i + 6;
        if (i > 0 && is_word(s[i - 1])) continue;
        for (size_t k = 0; k < sizeof(ENTRIES) / sizeof(*ENTRIES); k++) {
            Py_ssize_t len = (Py_ssize_t)strlen(ENTRIES[k]);
            if (starts_len(s + j, n - j, ENTRIES[k], len) && (j + len == n || !is_word(s[j + len]))) return SG_LAUNCH;
        }
        Py_ssize_t k = j;
        while (k < n && is_space(s[k])) k++;
        if (k > j && starts_len(s + k, n - k, "serve", 5) && (k + 5 == n || !is_word(s[k + 5]))) return SG_LAUNCH;
    }
    return SG_IDLE;
}

/* Whether result.settings holds `prefix` + s[0:n]: 1, 0, -1 on an error. */
static int env_held(struct env_fast *v, const char *prefix, const char *s, Py_ssize_t n) {
    Py_ssize_t k = (Py_ssize_t)strlen(prefix);
    if (n > ENV_NAME_MAX - k) return 0;
    char name[ENV_NAME_MAX];
    memcpy(name, prefix, (size_t)k);
    memcpy(name + k, s, (size_t)n);
    PyObject *key = PyUnicode_DecodeASCII(name, k + n, NULL);
    int held = key ? PyDict_Contains(v->settings, key) : -1;
    Py_XDECREF(key);
    return held;
}

#define ENV_RESOLVED_MAX 4096  /* flags whose resolution is kept: past it each is asked again */

/* sglang._resolve_flag(s[0:n]), kept by flag: a borrowed (key, type) tuple or None; NULL on an error. */
static PyObject *env_resolve(struct env_fast *v, const char *s, Py_ssize_t n) {
    PyObject *flag = PyUnicode_DecodeASCII(s, n, NULL);
    if (!flag) return NULL;
    PyObject *spec = PyDict_GetItemWithError(v->resolved, flag);
    if (!spec && !PyErr_Occurred()) {
        PyObject *made = PyObject_CallOneArg(v->resolve, flag);
        if (made && PyDict_GET_SIZE(v->resolved) >= ENV_RESOLVED_MAX) PyDict_Clear(v->resolved);
        if (made && PyDict_SetItem(v->resolved, flag, made) == 0) spec = made;  /* (the dict holds it) */
        Py_XDECREF(made);
    }
    Py_DECREF(flag);
    return spec;
}

/* sglang.Parser.feed on a launch command, its reader not busy (C twin of _continue_launch,
 * _finish_launch and _flags' walk, which say how): a line not ending in `\` (else it joins the next,
 * busy) is the command: the format sglang_launch, the setting engine, and the settings of its words
 * (shell_words of line.rstrip(), or its str.split() where that gives None): env.NAME of a
 * `SGLANG_*=`/`SGL_*=` word, the setting a `--flag` resolves to (_resolve_flag; a flag without `=`
 * takes the next word, not a `--` one, as its value). set() keeps the first: where each is held,
 * nothing changes. OK so, PYTHON where one is not (or the words are not read here), ERROR. */
static int env_sglang_launch(struct env_fast *v, const char *s, Py_ssize_t n, env_words_t *w) {
    Py_ssize_t e = n;
    while (e > 0 && is_space(s[e - 1])) e--;
    if ((e > 0 && s[e - 1] == '\\') || !v->has_sglang_launch || v->resolve == Py_None) return PYTHON;
    int held = PyDict_Contains(v->settings, v->k_engine);
    if (held <= 0) return held < 0 ? ERROR : PYTHON;
    if (!env_words(s, e, w, 0)) return PYTHON;
    for (int k = 0; k < w->count; k++) {
        const char *t = w->buf + w->at[k];
        Py_ssize_t tl = w->len[k], kl = env_assignment(t, tl);
        if (kl) {  /* _ENV */
            if ((kl >= 7 && memeq(t, "SGLANG_", 7)) || (kl >= 4 && memeq(t, "SGL_", 4))) {
                held = env_held(v, "env.", t, kl);
                if (held <= 0) return held < 0 ? ERROR : PYTHON;
            }
            continue;
        }
        if (tl < 2 || !memeq(t, "--", 2)) continue;
        const char *eq = memchr(t, '=', (size_t)tl);
        PyObject *spec = env_resolve(v, t, eq ? eq - t : tl);
        if (!spec) return ERROR;
        if (spec != Py_None && (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 2
                                || !PyUnicode_CheckExact(PyTuple_GET_ITEM(spec, 0))))
            return PYTHON;
        if (!eq && PyTuple_CheckExact(spec) && PyTuple_GET_ITEM(spec, 1) != (PyObject *)&PyBool_Type) {
            /* the value is the next word, unless none is left or it is a flag (then no set()) */
            if (k + 1 >= w->count || starts_len(w->buf + w->at[k + 1], w->len[k + 1], "--", 2)) continue;
            k++;
        } else if (!eq && spec == Py_None && k + 1 < w->count
                   && !starts_len(w->buf + w->at[k + 1], w->len[k + 1], "--", 2)) {
            k++;  /* (taken, and set nowhere) */
        }
        if (spec != Py_None) {
            held = PyDict_Contains(v->settings, PyTuple_GET_ITEM(spec, 0));
            if (held <= 0) return held < 0 ? ERROR : PYTHON;
        }
    }
    return OK;
}

/* nccl_tests.binary(s[0:n]): the test's name before the `_perf` of its binary, in *at..*end; 0 for
 * none. From each `_perf` in turn: one that ends the word (or `_perf_mpi` does), its name the run of
 * [a-z0-9_] before it, led by a letter, after the line's start, a '/' or whitespace. */
static int env_binary(const char *s, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *end) {
    for (const char *p = s; (p = find_at(p, n - (p - s), "_perf", 5, 4)); p++) {  /* (its 'f': NCCL_ names hold '_') */
        Py_ssize_t i = p - s, e = i + 5;
        int ends = e == n || is_space(s[e])
            || (starts_len(s + e, n - e, "_mpi", 4) && (e + 4 == n || is_space(s[e + 4])));
        if (!ends) continue;
        Py_ssize_t a = i;
        while (a > 0 && ((s[a - 1] >= 'a' && s[a - 1] <= 'z') || is_digit(s[a - 1]) || s[a - 1] == '_')) a--;
        if (a < i && s[a] >= 'a' && s[a] <= 'z' && (a == 0 || s[a - 1] == '/' || is_space(s[a - 1]))) {
            *at = a, *end = i;
            return 1;
        }
    }
    return 0;
}

/* nccl_tests.Parser.feed on a line its STARTS does not name (no `#` or digit first) and that holds
 * its `_perf`: a command naming a test's binary sets op_command (op_name of it) and the setting
 * nccl_tests.command (set() keeps the first). OK with *op the op_command to set (NULL: the one it
 * holds, or none to set), PYTHON where the setting is not held yet, ERROR. */
static int env_tests_command(Scanner *self, struct env_fast *v, const char *s, Py_ssize_t n, PyObject **op) {
    Py_ssize_t a, b;
    *op = NULL;
    if (!env_binary(s, n, &a, &b) || find_at(s, n, "NCCL INFO", 9, 8)) return OK;
    int held = PyDict_Contains(v->settings, v->k_tests_command);
    if (held <= 0) return held < 0 ? ERROR : PYTHON;
    /* op_name: the name (no '/' in it) without a last `_mpi`, then without a last `_perf` */
    if (b - a >= 4 && memeq(s + b - 4, "_mpi", 4)) b -= 4;
    if (b - a >= 5 && memeq(s + b - 5, "_perf", 5)) b -= 5;
    PyObject *name = PyUnicode_DecodeASCII(s + a, b - a, NULL);
    PyObject *now = name ? PyObject_GetAttr(self->tests->parser, v->k_op_command) : NULL;
    int same = now && PyUnicode_CheckExact(now) ? PyUnicode_Compare(now, name) : 1;
    Py_XDECREF(now);
    if (!now || (same == -1 && PyErr_Occurred())) {
        Py_XDECREF(name);
        return ERROR;
    }
    if (same == 0) Py_DECREF(name);
    else *op = name;
    return OK;
}

/* A vLLM process tag the Tagger reads (_VLLM: `^\((\w+?)...pid=(\d+)\)`): its `pid=N)` is at the
 * line's first ')', so a line with no "pid=" before that ')' has none. */
static int env_vllm_tag(const char *s, Py_ssize_t n) {
    const char *close = memchr(s, ')', (size_t)n);
    return find(s, close ? close - s : n, "pid=", 4) != NULL;
}

/* A line of the Tagger, nccl_debug and launch_env (and of nccl_tests by its `_perf`, sglang by its
 * `sglang`, where those do what env_tests_command and env_sglang_idle say): what they and the
 * watcher do with it, or DECLINE. */
static int env_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, Eagle *e, int flags,
                    unsigned rd, uint64_t lits, unsigned by_start) {
    struct nccl_fast *f = self->nccl;
    struct env_fast *v = f ? f->env : NULL;
    unsigned more = rd & ~(BIT(R_TAGGER) | BIT(R_NCCL_DEBUG) | BIT(R_LAUNCH_ENV));
    if (!v || n == 0 || e->in_block || more & ~(BIT(R_NCCL_TESTS) | BIT(R_SGLANG))) return DECLINE;
    if (more & BIT(R_NCCL_TESTS) && (by_start & BIT(R_NCCL_TESTS) || !self->tests || !self->tests->parser)) return DECLINE;
    int sglang = more & BIT(R_SGLANG) ? by_start & BIT(R_SGLANG) ? SG_PYTHON : env_sglang_idle(self, s, n, lits) : SG_IDLE;
    if (sglang == SG_PYTHON) return DECLINE;
    char c = s[0];
    /* the Tagger: a vLLM tag, an nccl-tests row, a SGLang prefix, an NCCL head; a `$x` or `+x` first
     * (_LAUNCH_CMD's other branch); ServerArgs */
    if (c == '#' || is_space(c) || ((c == '$' || c == '+') && (n < 2 || !is_space(s[1])))) return DECLINE;
    if (c == '(' && env_vllm_tag(s, n)) return DECLINE;
    Py_ssize_t t0, t1;
    if (c == '[' && sglang_prefix(s, n, &t0, &t1) && t1 > t0) return DECLINE;
    /* (found by a rare byte of each, memchr's: a long command holds many 'N', 'n', '_' and '=') */
    if (env_head_anywhere(s, n) || find_at(s, n, "server_args=ServerArgs(", 23, 22)) return DECLINE;
    /* nccl_debug: a conf file, an RCCL version (the library set again), a bare version read below */
    if (find_at(s, n, "NCCL_CONF_FILE", 14, 8) || find_at(s, n, "nccl.conf", 9, 4)
        || (find_at(s, n, "RCCL version", 12, 5) && find(s, n, " NCCL INFO ", 11)))
        return DECLINE;
    if (v->fetched == 0 && !env_fetch(f, v)) return DECLINE;
    if (v->fetched < 0) return DECLINE;
    int wanted = (rd & ~BIT(R_TAGGER)) != 0;  /* a format reader's literal or start: the Watcher's wanted() */
    int has_nccl_ = find(s, n, "NCCL_", 5) != NULL;
    int launch = (rd & BIT(R_LAUNCH_ENV)) != 0;
    if (find_at(s, n, "environ", 7, 2) && find_at(s, n, "pid=", 4, 2)) {
        /* _DUMP: the first `\bpid=\d+ environ\b`, then launch_env's `[^:]*:\s*(.*)$` */
        for (Py_ssize_t i = 0; i + 4 <= n; i++) {
            if (s[i] != 'p' || (i > 0 && is_word(s[i - 1])) || !starts_len(s + i, n - i, "pid=", 4)) continue;
            Py_ssize_t d = nccl_digits(s, n, i + 4);
            if (d == i + 4 || !starts_len(s + d, n - d, " environ", 8) || (d + 8 < n && is_word(s[d + 8]))) continue;
            const char *colon = memchr(s + d + 8, ':', (size_t)(n - d - 8));
            if (!colon || !launch || !has_nccl_ || !wanted || more) return DECLINE;
            Py_ssize_t body = colon - s + 1;
            while (body < n && is_space(s[body])) body++;
            int r = env_dump(f, v, s, n, line, lineno, i, d, body);
            return r == PYTHON ? DECLINE : r;
        }
        return DECLINE;  /* no dump: the Tagger and launch_env go on down their branches */
    }
    if (!(flags & F_MAIN)) return DECLINE;  /* the Tagger makes "main" of it */
    env_cmd *cmd = v->cmd;
    if ((launch || sglang == SG_LAUNCH) && !cmd && !(cmd = v->cmd = malloc(sizeof(*cmd)))) {
        PyErr_NoMemory();
        return ERROR;
    }
    /* launch_env: an env dump was ruled out; with "NCCL_", its launch flags, then _command */
    int flagged = launch && has_nccl_ && env_flag_test(s, n), records = 0;
    Py_ssize_t fi = 0, key_at, key_end, value_at, value_end;
    int quoted;
    if (flagged && n > ENV_TEXT_MAX) return DECLINE;  /* (cmd->value holds a value) */
    int nflags = 0;
    while (flagged && env_next_flag(s, n, &fi, &key_at, &key_end, &value_at, &value_end, &quoted)) {
        records += value_end - value_at > 2 * quoted;  /* _declared: an empty value is unset */
        if (nflags < ENV_FLAGS) {
            Py_ssize_t *at = cmd->flag[nflags];
            at[0] = key_at, at[1] = key_end, at[2] = value_at, at[3] = value_end;
            cmd->flag_quoted[nflags] = quoted;
        }
        nflags++;
    }
    int what = launch ? env_command(s, n, has_nccl_, cmd) : CMD_NOTHING;
    int status = DECLINE, version = 0;
    PyObject *lineobj = NULL, *key = NULL, *op = NULL;
    if (what == CMD_PYTHON) goto done;
    /* nccl_debug: a bare version (`^NCCL version \d`), read once its settings are held */
    if (rd & BIT(R_NCCL_DEBUG) && starts(s, n, "NCCL version ") && n > 13 && is_digit(s[13])) {
        if (!env_bare_version(f, s, n)) goto done;
        version = 1;
    }
    /* sglang: a launch command whose settings are held */
    if (sglang == SG_LAUNCH) {
        int r = env_sglang_launch(v, s, n, &cmd->launch);
        if (r != OK) { status = r == ERROR ? ERROR : DECLINE; goto done; }
    }
    /* nccl_tests: a command naming a test's binary, once its setting is held */
    if (more & BIT(R_NCCL_TESTS)) {
        int r = env_tests_command(self, v, s, n, &op);
        if (r != OK) { status = r == ERROR ? ERROR : DECLINE; goto done; }
    }
    int cmd_records = 0;
    if (what == CMD_PAIRS) {
        /* set() of a name held already changes nothing; a new one is Python's to set */
        env_words_t *w = &cmd->w;
        for (int k = cmd->first; k < cmd->first + cmd->pairs; k++) {
            const char *word = w->buf + w->at[k];
            Py_ssize_t kl = env_assignment(word, w->len[k]);
            if (kl >= 5 && memeq(word, "NCCL_", 5)) {
                cmd_records += w->len[k] > kl + 1;  /* an empty value is unset */
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
    }
    records += cmd_records;
    if (records && !v->has_format) goto done;
    /* every check is passed: the moves, in the readers' order */
    status = ERROR;
    if (!(lineobj = PyLong_FromLongLong((long long)lineno))) goto done;
    if ((c == '$' || c == '+') && (find(s + 2, n - 2, "python", 6) || find(s + 2, n - 2, "serve", 5)
                                   || find(s + 2, n - 2, "launch", 6) || find(s + 2, n - 2, "torchrun", 8)
                                   || find(s + 2, n - 2, "mpirun", 6))
        && PyList_Append(v->launch_lines, lineobj) < 0)  /* _LAUNCH_CMD */
        goto done;
    if (version && PySet_Add(f->used, lineobj) < 0) goto done;
    if (op && PyObject_SetAttr(self->tests->parser, v->k_op_command, op) < 0) goto done;
    fi = 0;
    for (int k = 0; flagged && k < nflags; k++) {
        if (k < ENV_FLAGS) {  /* (found above) */
            const Py_ssize_t *at = cmd->flag[k];
            key_at = at[0], key_end = at[1], value_at = at[2], value_end = at[3], quoted = cmd->flag_quoted[k];
            fi = value_end;  /* (env_next_flag's place after it) */
        } else if (!env_next_flag(s, n, &fi, &key_at, &key_end, &value_at, &value_end, &quoted)) {
            break;
        }
        Py_ssize_t len = env_flag_value(s + value_at, value_end - value_at, quoted, cmd->value);
        if (len && env_record(f, v, s + key_at, key_end - key_at, cmd->value, len, v->k_declared, lineobj,
                              v->src_flag, f->k_empty, v->main) < 0)
            goto done;
    }
    if (cmd_records) {
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
    }
    if (records && PySet_Add(v->declared_by, v->main) < 0) goto done;  /* as stamp() adds a declared record's */
    if (context_offer(f->ctx, v->offer, s, n, line, lineno, wanted) < 0) goto done;
    status = OK;
done:
    Py_XDECREF(lineobj); Py_XDECREF(key); Py_XDECREF(op);
    return status;
}
