/* SPDX-License-Identifier: Apache-2.0 */
/* Shared test helpers. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adump_config.h"
#include "adump/adump.h"
#include "adump/reader.h"
#include "helpers.h"
#include "iouring/writer.h"
#if defined(ADUMP_HAVE_SYS_OPENAT2) && defined(ADUMP_HAVE_RESOLVE_BENEATH)
#include <linux/openat2.h>
#include <sys/syscall.h>
#endif

char *t_tmpdir(const char *tag)
{
	const char *base = getenv("ADUMP_TEST_TMP");
	char *path;

	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0755);
	if (asprintf(&path, "%s/%s.XXXXXX", base, tag ? tag : "t") < 0)
		return NULL;
	if (!mkdtemp(path)) {
		free(path);
		return NULL;
	}
	return path;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		chmod(path, 0700);
	return remove(path) < 0 ? -errno : 0;
}

int t_rmtree(const char *path)
{
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

uint64_t t_seed(void)
{
	static uint64_t seed;
	const char *env;

	if (seed)
		return seed;
	env = getenv("ADUMP_TEST_SEED");
	seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (!seed)
		seed = 1;
	fprintf(stderr, "test seed: ADUMP_TEST_SEED=%llu\n", (unsigned long long)seed);
	return seed;
}

uint64_t t_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

void *t_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	char *buf = NULL;
	size_t done = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0)
		goto out;
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		goto out;
	while (done < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
		if (r <= 0) {
			free(buf);
			buf = NULL;
			goto out;
		}
		done += (size_t)r;
	}
	*len = done;
out:
	close(fd);
	return buf;
}

static const char *count_suffix;
static size_t count_result;

static int count_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t n = strlen(path), m = strlen(count_suffix);

	(void)st;
	/* A live session's hand-over journal (removed at its end) is not one of its files. */
	if (!strncmp(path + ftw->base, "adump-journal-", 14))
		return 0;
	if (flag == FTW_F && n >= m && strcmp(path + n - m, count_suffix) == 0)
		count_result++;
	return 0;
}

size_t t_count_files(const char *dir, const char *suffix)
{
	count_suffix = suffix;
	count_result = 0;
	nftw(dir, count_one, 32, FTW_PHYS);
	return count_result;
}

static unsigned skipped_count;

static int probe_direct(void)
{
	const char *base = getenv("ADUMP_TEST_TMP");
	char path[PATH_MAX];
	int fd, ret = 0;

	if (!base || !*base)
		base = "/tmp";
	mkdir(base, 0755);
	snprintf(path, sizeof(path), "%s/probe-direct.XXXXXX", base);
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	close(fd);
	fd = open(path, O_WRONLY | O_DIRECT);
	if (fd < 0)
		ret = -errno;
	else
		close(fd);
	unlink(path);
	return ret;
}

static int probe_openat2(void)
{
#if defined(ADUMP_HAVE_SYS_OPENAT2) && defined(ADUMP_HAVE_RESOLVE_BENEATH)
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY, .resolve = RESOLVE_BENEATH };
	long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof(how));

	if (fd < 0)
		return -errno;
	close((int)fd);
	return 0;
#else
	return -ENOSYS;
#endif
}

int t_feature_probe(enum t_feature f)
{
	static int probed[3];
	static bool is_probed[3];

	if ((unsigned)f >= 3)
		return -EINVAL;
	if (!is_probed[f]) {
		probed[f] = f == T_URING ? adump_writer_probe_uring() :
			    f == T_DIRECT ? probe_direct() : probe_openat2();
		is_probed[f] = true;
	}
	return probed[f];
}

bool t_feature_need(enum t_feature f, const char *test)
{
	static const char *const names[] = { "io_uring", "O_DIRECT", "openat2" };
	int ret = t_feature_probe(f);

	if (ret == 0)
		return true;
	printf("SKIP: %s: %s refused here (%s)\n", test, names[f], strerror(-ret));
	skipped_count++;
	return false;
}

int t_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return 1;
	if (skipped_count) {
		printf("SKIP: %u test(s) left out, a kernel feature is refused here (see above)\n",
		       skipped_count);
		return 77;
	}
	return 0;
}

int t_run_tool(const char *tool, const char *out_dir, const char *fmt, ...)
{
	char args[8192], cmd[9000];
	va_list ap;
	int status;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s %s >%s/stdout 2>%s/stderr", tool, args, out_dir, out_dir);
	status = system(cmd);
	ck_assert_int_ne(status, -1);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

char *t_slurp(const char *dir, const char *name)
{
	char path[PATH_MAX];
	size_t len;
	char *buf, *text;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	buf = t_read_file(path, &len);
	ck_assert_msg(buf != NULL, "cannot read %s", path);
	text = malloc(len + 1);
	ck_assert_ptr_nonnull(text);
	memcpy(text, buf, len);
	text[len] = '\0';
	free(buf);
	return text;
}

uint64_t t_packed_entries_whole(const char *dir)
{
	struct adump_reader_packed *p;
	const struct adump_reader_packed_entry *e;
	struct adump_reader *r;
	char packed[4300];
	uint64_t whole = 0;
	int ret;

	snprintf(packed, sizeof(packed), "%s/packed", dir);
	ck_assert_int_eq(adump_reader_create(&r), 0);
	ck_assert_int_eq(adump_reader_packed_open(packed, &p), 0);
	while ((ret = adump_reader_packed_next(p, &e)) > 0) {
		ck_assert_msg(e->status == ADUMP_PACKED_ENTRY, "%s line %u: %s", e->index_path,
			      e->line, e->message);
		ck_assert_msg(adump_reader_open_packed(r, p, e, true) == 0, "%s",
			      adump_reader_error(r));
		adump_reader_close(r);
		whole++;
	}
	ck_assert_int_eq(ret, 0);
	adump_reader_packed_close(p);
	adump_reader_destroy(r);
	return whole;
}

char t_logged[8192];

static void log_into(enum adump_log_level level, const char *module, const char *msg, void *user)
{
	size_t n = strlen(t_logged);

	(void)user;
	if (level >= ADUMP_LOG_WARN)
		snprintf(t_logged + n, sizeof(t_logged) - n, "%s: %s\n", module, msg);
}

void t_log_catch(void)
{
	t_logged[0] = '\0';
	adump_set_log_fn(log_into, NULL);
}

void t_log_release(void)
{
	adump_set_log_fn(NULL, NULL);
}
