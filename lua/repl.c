/* lua/repl.c - the interactive loop: libedit line editing and history, multi-line input,
 * results pretty-printed by perfsh.repl, errors with a traceback, Ctrl-C stops the chunk. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>
#include <lauxlib.h>
#include <lua.h>

#include "host.h"
#include "lhelp.h"

static char history_file[1024];
static volatile sig_atomic_t prompt_interrupted;

/* Tab completion: perfsh.repl.complete computes the candidates in Lua (the word they complete
   and where it starts); attempt_completion hands them to libedit, whose word (after a break
   character) may begin before or after that one. */
static lua_State *complete_L;
static char word_breaks[] = " \t\n\"'`(){}[],=;+*<>~#%^&|";

/* Push perfsh.repl.complete(line, cursor): candidates, start (1-based); 0 on failure. */
static int push_candidates(lua_State *L, const char *line, int cursor)
{
	lua_getglobal(L, "require");
	lua_pushliteral(L, "perfsh.repl");
	if (lua_pcall(L, 1, 1, 0) != LUA_OK)
		return 0;
	lua_getfield(L, -1, "complete");
	lua_pushstring(L, line);
	lua_pushinteger(L, cursor);
	return lua_pcall(L, 2, 2, 0) == LUA_OK && lua_istable(L, -2) && lua_isinteger(L, -1);
}

/* Candidate @c as the replacement of libedit's word at @start (0-based), given that the
   word perfsh.complete found starts at @mine (0-based): drop what is typed before libedit's
   word, or put back what precedes perfsh.complete's. */
static char *as_match(const char *line, int start, int mine, const char *c)
{
	if (start >= mine)
		return strdup((size_t)(start - mine) <= strlen(c) ? c + (start - mine) : "");
	char *m = malloc((size_t)(mine - start) + strlen(c) + 1);
	if (m) {
		memcpy(m, line + start, (size_t)(mine - start));
		strcpy(m + (mine - start), c);
	}
	return m;
}

/* The matches: their longest common prefix first, then each candidate. */
static char **attempt_completion(const char *text, int start, int end)
{
	lua_State *L = complete_L;
	int top = lua_gettop(L);
	char **m = NULL;

	(void)text;
	rl_attempted_completion_over = 1;
	if (!push_candidates(L, rl_line_buffer, end))
		goto out;
	int mine = (int)lua_tointeger(L, -1) - 1;
	size_t n = (size_t)luaL_len(L, -2);
	if (n == 0 || mine < 0 || mine > end || !(m = calloc(n + 2, sizeof *m)))
		goto out;
	size_t common = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		lua_geti(L, -2, (lua_Integer)i + 1);
		const char *c = lua_tostring(L, -1);
		m[i + 1] = as_match(rl_line_buffer, start, mine, c ? c : "");
		lua_pop(L, 1);
		if (!m[i + 1])
			break;
		size_t j = 0;
		while (j < common && m[1][j] && m[i + 1][j] == m[1][j])
			j++;
		common = j;
	}
	m[0] = m[n] ? strndup(m[1], common) : NULL;
	if (!m[0] || n == 1) { /* one match: m[0] is all; or out of memory */
		for (size_t i = 1; i <= n; i++) {
			free(m[i]);
			m[i] = NULL;
		}
		if (!m[0]) {
			free(m);
			m = NULL;
		}
	}
out:
	lua_settop(L, top);
	return m;
}

/* Ctrl-C at the prompt: not the end of the shell (see get_line); SIGTERM or SIGHUP ends it,
   closing the tracees (an attached process is detached). ps_host_docall() installs its own
   handlers while a chunk runs. */
static void on_prompt_signal(int sig)
{
	prompt_interrupted = sig;
}

/* Read one line; NULL at end of input. The result is malloc'd. Ctrl-C at the prompt drops
   the line being typed and asks again, as a shell does. */
static char *get_line(int tty, const char *prompt)
{
	if (tty) {
		for (;;) {
			char *l;
			prompt_interrupted = 0;
			l = readline(prompt);
			if (l || !prompt_interrupted)
				return l;
			if (prompt_interrupted != SIGINT)
				return NULL;
			fputs("^C\n", stdout);
			fflush(stdout);
		}
	}
	char buf[4096];
	if (!fgets(buf, sizeof buf, stdin))
		return NULL;
	buf[strcspn(buf, "\n")] = '\0';
	return strdup(buf);
}

/* Is the syntax error on top of the stack an unfinished chunk? (lua.c's incomplete) */
static int incomplete(lua_State *L, int status)
{
	if (status == LUA_ERRSYNTAX) {
		size_t lmsg;
		const char *msg = lua_tolstring(L, -1, &lmsg);
		if (lmsg >= 5 && strcmp(msg + lmsg - 5, "<eof>") == 0) {
			lua_pop(L, 1);
			return 1;
		}
	}
	return 0;
}

/* Push function @fn of perfsh.replenv; 0 (nothing pushed) if it cannot be loaded. */
static int push_replenv(lua_State *L, const char *fn)
{
	lua_getglobal(L, "require");
	lua_pushliteral(L, "perfsh.replenv");
	if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
		lua_pop(L, 1);
		return 0;
	}
	lua_getfield(L, -1, fn);
	lua_remove(L, -2);
	return 1;
}

/* The chunk on top of the stack runs in the REPL's environment (perfsh.replenv.env()): the
   names its earlier chunks kept, then the globals. */
static void use_env(lua_State *L)
{
	if (!push_replenv(L, "env"))
		return;
	if (lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_setupvalue(L, -2, 1))
		lua_pop(L, 1);
}

/* The code at -2 compiled to the function at -1: where it declares top-level locals, that
   function becomes the one of perfsh.replenv.rewrite(code), which keeps them in the REPL's
   environment for the next lines (`local t = perfsh.spawn{...}`, then `t:run()`). */
static void keep_locals(lua_State *L)
{
	size_t len;
	const char *code;

	if (!push_replenv(L, "rewrite"))
		return;
	lua_pushvalue(L, -3);
	if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
		lua_pop(L, 1);
		return;
	}
	code = lua_tolstring(L, -1, &len);
	if (luaL_loadbuffer(L, code, len, "=stdin") == LUA_OK)
		lua_replace(L, -3);
	else
		lua_pop(L, 1); /* cannot happen; the chunk as typed stays */
	lua_pop(L, 1);
}

/* Compile the input, as an expression first ("return " .. line), then as statements,
   reading more lines while the chunk is unfinished. Leaves the function on the stack. */
static int load_input(lua_State *L, int tty, const char *first)
{
	lua_pushfstring(L, "return %s", first);
	int status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_rawlen(L, -1), "=stdin");
	lua_remove(L, -2);
	if (status == LUA_OK) {
		if (tty)
			add_history(first);
		return status;
	}
	lua_pop(L, 1);
	lua_pushstring(L, first);
	for (;;) {
		size_t len;
		const char *code = lua_tolstring(L, -1, &len);
		status = luaL_loadbuffer(L, code, len, "=stdin");
		if (!incomplete(L, status))
			break;
		char *more = get_line(tty, ">> ");
		if (!more)
			break; /* end of input in the middle: report the error below */
		lua_pushfstring(L, "%s\n%s", code, more);
		lua_remove(L, -2);
		free(more);
	}
	if (status == LUA_OK)
		keep_locals(L);
	if (tty && status == LUA_OK)
		add_history(lua_tostring(L, -2));
	lua_remove(L, -2);
	return status;
}

/* A line that begins with ':' is a command (perfsh.repl.command): print what it returns. */
static void run_command(lua_State *L, const char *line)
{
	int top = lua_gettop(L);
	lua_getglobal(L, "require");
	lua_pushliteral(L, "perfsh.repl");
	if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
		lua_getfield(L, -1, "command");
		lua_pushstring(L, line);
		if (ps_host_docall(L, 1, 1) == LUA_OK)
			puts(lua_tostring(L, -1) ? lua_tostring(L, -1) : "");
		else
			ps_host_report(L);
	} else {
		ps_host_report(L);
	}
	fflush(stdout);
	lua_settop(L, top);
}

/* Print the results with perfsh.repl.print (falls back to print). */
static void print_results(lua_State *L, int n)
{
	if (n == 0)
		return;
	lua_getglobal(L, "require");
	lua_pushliteral(L, "perfsh.repl");
	if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
		lua_getfield(L, -1, "print");
		lua_remove(L, -2);
	} else {
		lua_pop(L, 1);
		lua_getglobal(L, "print");
	}
	lua_insert(L, -(n + 1));
	if (ps_host_docall(L, n, 0) != LUA_OK)
		ps_host_report(L);
}

int ps_host_repl(lua_State *L)
{
	int tty = isatty(0);
	const char *home = getenv("HOME"), *hist = getenv("PERFSH_HISTORY");
	char *line;

	/* help and help "topic" (perfsh.help) */
	lua_getglobal(L, "require");
	lua_pushliteral(L, "perfsh.help");
	if (lua_pcall(L, 1, 1, 0) == LUA_OK)
		lua_setglobal(L, "help");
	else
		lua_pop(L, 1);
	if (tty) {
		if (hist && hist[0])
			snprintf(history_file, sizeof history_file, "%s", hist);
		else if (home)
			snprintf(history_file, sizeof history_file, "%s/.perfsh_history", home);
		using_history();
		complete_L = L;
		rl_completion_append_character = '\0';
		rl_basic_word_break_characters = word_breaks;
		rl_completer_word_break_characters = word_breaks;
		rl_attempted_completion_function = attempt_completion;
		if (history_file[0])
			read_history(history_file);
		printf("perfsh %s - Lua %s.%s; perfsh is loaded. Ctrl-D leaves.\n", PS_VERSION, LUA_VERSION_MAJOR,
		       LUA_VERSION_MINOR);
	}
	static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa = {0}, old[3];
	sa.sa_handler = on_prompt_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	ps_host_repl_mode = 1;
	while ((line = get_line(tty, "perfsh> "))) {
		int top = lua_gettop(L), status;
		if (!line[0]) {
			free(line);
			continue;
		}
		if (line[0] == ':') {
			if (tty)
				add_history(line);
			run_command(L, line);
			free(line);
			continue;
		}
		status = load_input(L, tty, line);
		free(line);
		if (status == LUA_OK) {
			use_env(L);
			status = ps_host_docall(L, 0, LUA_MULTRET);
		}
		if (status == LUA_OK)
			print_results(L, lua_gettop(L) - top);
		else
			ps_host_report(L);
		lua_settop(L, top);
		if (ps_l_signal_caught() == SIGTERM || ps_l_signal_caught() == SIGHUP)
			break;
		ps_l_signal_clear();
	}
	ps_host_repl_mode = 0;
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	if (tty) {
		putchar('\n');
		if (history_file[0])
			write_history(history_file);
		complete_L = NULL;
	}
	return 0;
}
