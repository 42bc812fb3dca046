/* SPDX-License-Identifier: Apache-2.0 */
/* common/openfile.c: a name from a capture opens only beneath the capture's directory (no
 * absolute path, no "..", no symlink out), with openat2 and with the component walk used
 * where the kernel lacks it; and neither call blocks on a FIFO or opens what is not a
 * regular file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "helpers.h"

struct tree {
	char *root;                     /* the test directory */
	char cap[4200];                 /* <root>/cap: the capture */
	char secret[4200];              /* <root>/secret.pt: outside it */
};

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f, "%s", path);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* <cap>/a.pt, <cap>/sub/b.pt, <cap>/fifo, <cap>/dir/, <cap>/out -> ../secret.pt,
 * <cap>/outdir -> .., <cap>/in -> a.pt, <cap>/abs -> <secret>. */
static void tree_make(struct tree *t)
{
	char p[4400];

	t->root = t_tmpdir("openfile");
	snprintf(t->cap, sizeof(t->cap), "%s/cap", t->root);
	snprintf(t->secret, sizeof(t->secret), "%s/secret.pt", t->root);
	ck_assert_int_eq(mkdir(t->cap, 0750), 0);
	write_text(t->secret, "secret");
	snprintf(p, sizeof(p), "%s/a.pt", t->cap);
	write_text(p, "a");
	snprintf(p, sizeof(p), "%s/sub", t->cap);
	ck_assert_int_eq(mkdir(p, 0750), 0);
	snprintf(p, sizeof(p), "%s/sub/b.pt", t->cap);
	write_text(p, "b");
	snprintf(p, sizeof(p), "%s/dir", t->cap);
	ck_assert_int_eq(mkdir(p, 0750), 0);
	snprintf(p, sizeof(p), "%s/fifo", t->cap);
	ck_assert_int_eq(mkfifo(p, 0640), 0);
	snprintf(p, sizeof(p), "%s/out", t->cap);
	ck_assert_int_eq(symlink("../secret.pt", p), 0);
	snprintf(p, sizeof(p), "%s/outdir", t->cap);
	ck_assert_int_eq(symlink("..", p), 0);
	snprintf(p, sizeof(p), "%s/in", t->cap);
	ck_assert_int_eq(symlink("a.pt", p), 0);
	snprintf(p, sizeof(p), "%s/abs", t->cap);
	ck_assert_int_eq(symlink(t->secret, p), 0);
}

static void tree_free(struct tree *t)
{
	adump_testpoint_disarm_all();
	ck_assert_int_eq(t_rmtree(t->root), 0);
	free(t->root);
}

/* The first byte of the file @fd reads, and @fd closed. */
static char first_byte(int fd)
{
	char c = 0;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, &c, 1), 1);
	ck_assert_int_eq(close(fd), 0);
	return c;
}

static void check_beneath(bool is_walk)
{
	struct tree t;
	char rel[4400];
	int fd;

	tree_make(&t);
	if (is_walk)
		adump_testpoint_arm("openfile.openat2", -ENOSYS, 1, 1);
	ck_assert_int_eq(first_byte(adump_open_beneath(t.cap, "a.pt")), 'a');
	ck_assert_int_eq(first_byte(adump_open_beneath(t.cap, "sub/b.pt")), 'b');
	ck_assert_int_eq(first_byte(adump_open_beneath(t.cap, "./sub//b.pt")), 'b');
	/* Names that leave the directory, however spelled, are refused. */
	ck_assert_int_eq(adump_open_beneath(t.cap, "../secret.pt"), -EXDEV);
	ck_assert_int_eq(adump_open_beneath(t.cap, "sub/../../secret.pt"), -EXDEV);
	ck_assert_int_eq(adump_open_beneath(t.cap, "sub/.."), -EXDEV);
	ck_assert_int_eq(adump_open_beneath(t.cap, t.secret), -EXDEV);
	ck_assert_int_eq(adump_open_beneath(t.cap, "out"), -EXDEV);
	ck_assert_int_eq(adump_open_beneath(t.cap, "abs"), -EXDEV);
	ck_assert_int_eq(adump_open_beneath(t.cap, "outdir/secret.pt"), -EXDEV);
	snprintf(rel, sizeof(rel), "/proc/self/fd/0");
	ck_assert_int_eq(adump_open_beneath(t.cap, rel), -EXDEV);
	ck_assert_int_eq(adump_open_beneath(t.cap, ""), -EXDEV);
	/* ...while names that merely hold dots are names. */
	ck_assert_int_eq(adump_open_beneath(t.cap, "..a.pt"), -ENOENT);
	/* A symlink that stays inside: followed by openat2, refused by the walk. */
	fd = adump_open_beneath(t.cap, "in");
	if (is_walk)
		ck_assert_int_eq(fd, -EXDEV);
	else
		ck_assert_int_eq(first_byte(fd), 'a');
	/* Not regular files: refused at once, the FIFO without waiting for a writer. */
	ck_assert_int_eq(adump_open_beneath(t.cap, "fifo"), -EINVAL);
	ck_assert_int_eq(adump_open_beneath(t.cap, "dir"), -EISDIR);
	ck_assert_int_eq(adump_open_beneath(t.cap, "missing.pt"), -ENOENT);
	ck_assert_ptr_nonnull(strstr(adump_open_strerror(-EXDEV), "outside"));
	ck_assert_ptr_nonnull(strstr(adump_open_strerror(-EINVAL), "FIFO"));
	tree_free(&t);
}

START_TEST(test_beneath_openat2)
{
	check_beneath(false);
}
END_TEST

START_TEST(test_beneath_walk)
{
	check_beneath(true);
}
END_TEST

/* A writer's directory: beneath, and no link on the way, even one that stays inside. */
static void check_dir_nolink(bool is_walk)
{
	struct tree t;
	struct stat st;
	int root, fd;

	tree_make(&t);
	if (is_walk)
		adump_testpoint_arm("openfile.openat2", -ENOSYS, 1, 1);
	root = open(t.cap, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(root, 0);
	fd = adump_dir_open_nolink(root, "");
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = adump_dir_open_nolink(root, "./sub/");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstatat(fd, "b.pt", &st, 0), 0);
	close(fd);
	ck_assert_int_eq(symlinkat("sub", root, "insub"), 0);
	ck_assert_int_eq(adump_dir_open_nolink(root, "insub"), -ELOOP);
	ck_assert_int_eq(adump_dir_open_nolink(root, "outdir"), -ELOOP);
	ck_assert_int_eq(adump_dir_open_nolink(root, "outdir/cap"), -ELOOP);
	ck_assert_int_eq(adump_dir_open_nolink(root, "../cap"), -EXDEV);
	ck_assert_int_eq(adump_dir_open_nolink(root, t.cap), -EXDEV);
	ck_assert_int_eq(adump_dir_open_nolink(root, "a.pt"), -ENOTDIR);
	ck_assert_int_eq(adump_dir_open_nolink(root, "missing"), -ENOENT);
	close(root);
	tree_free(&t);
}

START_TEST(test_dir_nolink_openat2)
{
	check_dir_nolink(false);
}
END_TEST

START_TEST(test_dir_nolink_walk)
{
	check_dir_nolink(true);
}
END_TEST

START_TEST(test_regular)
{
	struct tree t;
	char p[4400];
	int fd;

	tree_make(&t);
	/* A path the user gives may go anywhere, through symlinks too... */
	snprintf(p, sizeof(p), "%s/out", t.cap);
	ck_assert_int_eq(first_byte(adump_open_regular(p)), 's');
	/* ...but must be a regular file, and reads then block as usual. */
	fd = adump_open_regular(t.secret);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/fifo", t.cap);
	ck_assert_int_eq(adump_open_regular(p), -EINVAL);
	ck_assert_int_eq(adump_open_regular("/dev/null"), -EINVAL);
	ck_assert_int_eq(adump_open_regular(t.cap), -EISDIR);
	ck_assert_int_eq(adump_open_regular(""), -ENOENT);
	tree_free(&t);
}
END_TEST

START_TEST(test_name_is_beneath)
{
	ck_assert(adump_name_is_beneath("a.pt"));
	ck_assert(adump_name_is_beneath("x/..y/z..pt"));
	ck_assert(!adump_name_is_beneath(NULL));
	ck_assert(!adump_name_is_beneath(""));
	ck_assert(!adump_name_is_beneath("/etc/passwd"));
	ck_assert(!adump_name_is_beneath(".."));
	ck_assert(!adump_name_is_beneath("a/../../b"));
	ck_assert(!adump_name_is_beneath("a/.."));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("openfile");
	TCase *tc = tcase_create("openfile");

	tcase_set_timeout(tc, 30);
	t_tcase_add_test_needing(tc, T_OPENAT2, test_beneath_openat2);
	tcase_add_test(tc, test_beneath_walk);
	t_tcase_add_test_needing(tc, T_OPENAT2, test_dir_nolink_openat2);
	tcase_add_test(tc, test_dir_nolink_walk);
	tcase_add_test(tc, test_regular);
	tcase_add_test(tc, test_name_is_beneath);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
