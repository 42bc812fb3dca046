/* SPDX-License-Identifier: Apache-2.0 */
/* tests/report/: headless Chromium run without a shell: the page's DOM, console and requests. */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "browser.h"
#include "helpers.h"

bool browser_is_present(void)
{
	return access(BROWSER_PATH, X_OK) == 0;
}

static char *slurp(const char *path)
{
	size_t len = 0;
	char *buf = t_read_file(path, &len), *text = malloc(len + 1);

	ck_assert_ptr_nonnull(text);
	if (buf)
		memcpy(text, buf, len);
	text[buf ? len : 0] = '\0';
	free(buf);
	return text;
}

/* Run Chromium with @args (NULL-terminated), stdout to @out, stderr to @err; at most 90 s. */
static void run(char *const *args, const char *out, const char *err)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0640);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0640);

		if (fo < 0 || fe < 0)
			_exit(126);
		dup2(fo, 1);
		dup2(fe, 2);
		alarm(90);
		execv(args[0], args);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "chromium ended with status 0x%x (see %s)", status, err);
}

/* The console lines of Chromium's log ("...:CONSOLE:N] "message", source: ..."). */
static char *console_lines(const char *log)
{
	size_t len = 0;
	char *out = calloc(1, strlen(log) + 1);
	const char *p = log;

	ck_assert_ptr_nonnull(out);
	while ((p = strstr(p, ":CONSOLE"))) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		memcpy(out + len, p, n);
		len += n;
		out[len++] = '\n';
		p += n;
	}
	return out;
}

/* The http(s) URLs of the net log that are not Chromium's own background services. */
static char *page_requests(const char *netlog)
{
	static const char *const own[] = { ".google.com/", ".googleapis.com/", ".gstatic.com/" };
	size_t len = 0;
	char *out = calloc(1, strlen(netlog) + 1);
	const char *p = netlog;

	ck_assert_ptr_nonnull(out);
	while ((p = strstr(p, "\"url\":\"http"))) {
		const char *url = p + 7, *end = strchr(url, '"'), *host_end;
		bool is_own = false;

		if (!end)
			break;
		host_end = strchr(url + 8, '/');
		for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++) {
			const char *at = strstr(url, own[k]);

			if (at && host_end && at + strlen(own[k]) - 1 == host_end)
				is_own = true;
		}
		if (!is_own) {
			memcpy(out + len, url, (size_t)(end - url));
			len += (size_t)(end - url);
			out[len++] = '\n';
		}
		p = end;
	}
	return out;
}

void browser_open(const char *work, const char *path, const char *fragment,
		  const char *screenshot, struct browser_page *out)
{
	char profile[PATH_MAX], url[PATH_MAX + 256], dom[PATH_MAX], log[PATH_MAX], net[PATH_MAX];
	char net_arg[PATH_MAX + 32], profile_arg[PATH_MAX + 32], shot_arg[PATH_MAX + 32];
	char *log_text, *net_text;
	static unsigned serial;

	snprintf(profile, sizeof(profile), "%s/chromium-profile-%u", work, serial);
	snprintf(dom, sizeof(dom), "%s/dom-%u.html", work, serial);
	snprintf(log, sizeof(log), "%s/chromium-%u.log", work, serial);
	snprintf(net, sizeof(net), "%s/netlog-%u.json", work, serial);
	serial++;
	mkdir(profile, 0700);
	snprintf(url, sizeof(url), "file://%s%s", path, fragment);
	snprintf(net_arg, sizeof(net_arg), "--log-net-log=%s", net);
	snprintf(profile_arg, sizeof(profile_arg), "--user-data-dir=%s", profile);
	{
		char *args[] = { BROWSER_PATH, "--headless", "--no-sandbox", "--disable-gpu",
				 "--disable-quic", "--no-first-run", "--disable-background-networking",
				 "--disable-component-update", "--disable-sync", profile_arg,
				 "--enable-logging=stderr", "--v=0", net_arg,
				 "--virtual-time-budget=10000", "--dump-dom", url, NULL };

		run(args, dom, log);
	}
	out->dom = slurp(dom);
	log_text = slurp(log);
	net_text = slurp(net);
	out->console = console_lines(log_text);
	out->requests = page_requests(net_text);
	free(log_text);
	free(net_text);
	if (screenshot) {
		char shot_log[PATH_MAX + 8];

		snprintf(shot_arg, sizeof(shot_arg), "--screenshot=%s", screenshot);
		snprintf(shot_log, sizeof(shot_log), "%s.log", screenshot);
		char *args[] = { BROWSER_PATH, "--headless", "--no-sandbox", "--disable-gpu",
				 "--disable-quic", "--no-first-run", "--disable-background-networking",
				 "--disable-component-update", "--disable-sync", profile_arg,
				 "--hide-scrollbars", "--window-size=1280,1000",
				 "--virtual-time-budget=10000", shot_arg, url, NULL };

		run(args, shot_log, shot_log);
	}
}

void browser_page_free(struct browser_page *p)
{
	free(p->dom);
	free(p->console);
	free(p->requests);
}

char *browser_element_text(const char *dom, const char *id)
{
	char key[256];
	const char *start, *p;
	char *out;
	size_t len = 0;
	int depth = 0;

	snprintf(key, sizeof(key), "id=\"%s\"", id);
	start = strstr(dom, key);
	if (!start)
		return NULL;
	start = strchr(start, '>');
	if (!start)
		return NULL;
	out = malloc(strlen(start) + 1);
	ck_assert_ptr_nonnull(out);
	/* Text up to the element's end tag: nested elements are counted by their tags. */
	for (p = start + 1; *p; p++) {
		if (*p == '<') {
			if (p[1] == '/') {
				if (depth-- == 0)
					break;
			} else if (strncmp(p, "<br", 3) && strncmp(p, "<input", 6) &&
				   strncmp(p, "<img", 4)) {
				depth++;
			}
			p = strchr(p, '>');
			if (!p)
				break;
			continue;
		}
		out[len++] = *p;
	}
	out[len] = '\0';
	return out;
}
