/* SPDX-License-Identifier: Apache-2.0 */
/* The readers stay inside the capture they are given (issue 30): an msprobe data_name of
 * "../.." or an absolute path, a packed segment that is a symlink out, are refused with a
 * message saying so, the file outside never read (verify passed with it before); a FIFO in
 * place of a .pt, an index or a segment is refused at once by verify, compare, scan, inspect
 * and unpack (each hung before); and adump_pt_check() on a .pt whose zip entry name length
 * lies reports the entry instead of reading past its buffer (AddressSanitizer caught it). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adump/adump.h"
#include "adump/compare.h"
#include "adump/export.h"
#include "adump/reader.h"
#include "proto/proto.h"
#include "reader_helpers.h"

#ifndef ADUMP_TOOL
#error "ADUMP_TOOL must name the adump binary"
#endif

/* Every command runs under timeout(1): a reader that blocks fails the test (exit 124), and
 * leaves no process behind. */
#define TOOL "timeout 20 " ADUMP_TOOL

static const float values[6] = { 1, 2, 3, 4, 5, 6 };
static const uint64_t dims[1] = { 6 };

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f, "%s", path);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void write_pt(const char *path)
{
	char msg[256];

	ck_assert_msg(adump_pt_write(path, "t", ADUMP_DT_FLOAT, dims, 1, values, sizeof(values),
				     msg, sizeof(msg)) == 0, "%s", msg);
}

/* <root>/rank: dump.json with one entry whose input tensors' data_names are @names
 * (count @n), each a float32 [6]; and <root>/secret.pt, a valid .pt outside the rank
 * directory. */
static void msprobe_make(const char *root, const char *const *names, int n)
{
	char path[4400], json[8192];
	size_t len;

	snprintf(path, sizeof(path), "%s/rank", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/rank/dump_tensor_data", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/secret.pt", root);
	write_pt(path);
	len = (size_t)snprintf(json, sizeof(json), "{\"task\": \"tensor\", \"level\": \"L1\", "
			       "\"data\": {\"Functional.relu.0.forward\": {\"input_args\": [");
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(json + len, sizeof(json) - len,
					"%s{\"type\": \"torch.Tensor\", \"dtype\": "
					"\"torch.float32\", \"shape\": [6], \"data_name\": \"%s\"}",
					i ? ", " : "", names[i]);
	snprintf(json + len, sizeof(json) - len, "], \"output\": []}}}\n");
	snprintf(path, sizeof(path), "%s/rank/dump.json", root);
	write_text(path, json);
}

struct seen {
	int count;
	char text[8192];
};

static void note(void *arg, const char *file, const char *message)
{
	struct seen *s = arg;
	size_t n = strlen(s->text);

	s->count++;
	snprintf(s->text + n, sizeof(s->text) - n, "%s|%s\n", file, message);
}

START_TEST(test_msprobe_data_name_outside)
{
	char *root = t_tmpdir("trust"), names[2][4400], rank[4400], path[4400];
	const char *list[3];
	struct seen seen = { 0 };
	uint64_t bad = 0;

	/* One data_name climbs out of the rank directory, one is absolute; both name a valid
	 * .pt with the shape dump.json gives, so only where they lead is wrong. */
	snprintf(names[0], sizeof(names[0]), "../../secret.pt");
	snprintf(names[1], sizeof(names[1]), "%s/secret.pt", root);
	list[0] = names[0];
	list[1] = names[1];
	list[2] = "ok.pt";
	msprobe_make(root, list, 3);
	snprintf(rank, sizeof(rank), "%s/rank", root);
	snprintf(path, sizeof(path), "%s/dump_tensor_data/ok.pt", rank);
	write_pt(path);
	ck_assert_int_eq(adump_msprobe_verify(rank, note, &seen, &bad), 3);
	ck_assert_uint_eq(bad, 2);
	ck_assert_int_eq(seen.count, 2);
	ck_assert_msg(strstr(seen.text, "outside the capture"), "%s", seen.text);
	/* A symlink in dump_tensor_data that points out is refused as well. */
	snprintf(path, sizeof(path), "%s/dump_tensor_data/ok.pt", rank);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(symlink("../../secret.pt", path), 0);
	seen.count = 0;
	seen.text[0] = '\0';
	ck_assert_int_eq(adump_msprobe_verify(rank, note, &seen, &bad), 3);
	ck_assert_uint_eq(bad, 3);
	/* The command reports the refusal and fails. */
	ck_assert_int_eq(t_run_tool(TOOL, root, "verify %s", rank), 1);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_msprobe_pt_fifo)
{
	char *root = t_tmpdir("trust"), rank[4400], path[4400], *out;
	const char *list[1] = { "fifo.pt" };
	struct seen seen = { 0 };
	uint64_t bad = 0;
	int rc;

	msprobe_make(root, list, 1);
	snprintf(rank, sizeof(rank), "%s/rank", root);
	snprintf(path, sizeof(path), "%s/dump_tensor_data/fifo.pt", rank);
	ck_assert_int_eq(mkfifo(path, 0640), 0);
	ck_assert_int_eq(adump_msprobe_verify(rank, note, &seen, &bad), 1);
	ck_assert_uint_eq(bad, 1);
	ck_assert_msg(strstr(seen.text, "not a regular file"), "%s", seen.text);
	ck_assert_int_eq(t_run_tool(TOOL, root, "verify %s", rank), 1);
	rc = t_run_tool(TOOL, root, "compare -m %s -g %s -out %s", rank, rank, root);
	ck_assert_msg(rc != 124, "compare blocked on the FIFO");
	out = t_slurp(root, "stdout");
	free(out);
	/* a FIFO as the .pt the user names */
	ck_assert_int_eq(adump_pt_check(path, seen.text, sizeof(seen.text)), -EINVAL);
	ck_assert_int_eq(t_run_tool(TOOL, root, "verify %s", path), 1);
	t_rmtree(root);
	free(root);
}
END_TEST

/* <root>/cap/packed: one dump in w0-0.seg, indexed by w0.idx. */
static void packed_make(const char *root)
{
	struct adump_tensor t[1];
	struct adump_op op = { .op_type = "Add", .op_name = "x", .tensors = t, .tensor_count = 1 };
	const void *data[1] = { values };
	char path[4400], line[512];
	size_t len;
	void *dump;
	FILE *f;

	t[0] = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 1, dims, sizeof(values));
	dump = rt_dump_mem(&op, data, &len);
	snprintf(path, sizeof(path), "%s/cap", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/cap/packed", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/cap/packed/w0-0.seg", root);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(dump, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(line, sizeof(line), "0/Add.x.1.1.1796390235057329\tw0-0.seg\t0\t%zu\t%08x\n", len,
		 adump_crc32c(0, dump, len));
	snprintf(path, sizeof(path), "%s/cap/packed/w0.idx", root);
	write_text(path, line);
	free(dump);
}

/* Entries of the packed capture @dir that open; -1 if the list does not. */
static int packed_readable(const char *dir, char *why, size_t cap)
{
	struct adump_reader_packed *p;
	const struct adump_reader_packed_entry *e;
	struct adump_reader *r;
	int ok = 0;

	if (adump_reader_packed_open(dir, &p) < 0)
		return -1;
	ck_assert_int_eq(adump_reader_create(&r), 0);
	why[0] = '\0';
	while (adump_reader_packed_next(p, &e) > 0) {
		if (adump_reader_open_packed(r, p, e, true) == 0)
			ok++;
		else
			snprintf(why, cap, "%s", adump_reader_error(r));
	}
	adump_reader_destroy(r);
	adump_reader_packed_close(p);
	return ok;
}

START_TEST(test_packed_fifo_index)
{
	char *root = t_tmpdir("trust"), cap[4400], path[4400], why[1024];

	packed_make(root);
	snprintf(cap, sizeof(cap), "%s/cap", root);
	ck_assert_int_eq(packed_readable(cap, why, sizeof(why)), 1);
	/* A FIFO and a symlink out, both named as indexes: left out, the real one read. */
	snprintf(path, sizeof(path), "%s/packed/w1.idx", cap);
	ck_assert_int_eq(mkfifo(path, 0640), 0);
	snprintf(path, sizeof(path), "%s/packed/w2.idx", cap);
	ck_assert_int_eq(symlink("/etc/passwd", path), 0);
	ck_assert_int_eq(packed_readable(cap, why, sizeof(why)), 1);
	ck_assert_int_eq(t_run_tool(TOOL, root, "scan %s", cap), 0);
	ck_assert_int_eq(t_run_tool(TOOL, root, "compare -m %s -g %s -out %s", cap, cap, root), 0);
	ck_assert_int_eq(t_run_tool(TOOL, root, "inspect %s", cap), 0);
	snprintf(path, sizeof(path), "%s/out", root);
	ck_assert_int_eq(t_run_tool(TOOL, root, "unpack %s %s", cap, path), 1);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(test_packed_segment_refused)
{
	char *root = t_tmpdir("trust"), cap[4400], path[4400], out[4400], why[1024];

	packed_make(root);
	snprintf(cap, sizeof(cap), "%s/cap", root);
	snprintf(path, sizeof(path), "%s/packed/w0-0.seg", cap);
	snprintf(out, sizeof(out), "%s/out", root);
	/* The segment replaced by a FIFO: every reader refuses it at once. */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkfifo(path, 0640), 0);
	ck_assert_int_eq(packed_readable(cap, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "not a regular file"), "%s", why);
	ck_assert_int_eq(adump_unpack(cap, out), -EINVAL);
	ck_assert_int_eq(t_run_tool(TOOL, root, "verify %s", cap), 1);
	ck_assert_int_eq(t_run_tool(TOOL, root, "scan %s", cap), 3);
	ck_assert_int_eq(t_run_tool(TOOL, root, "unpack %s %s", cap, out), 1);
	ck_assert_int_ne(t_run_tool(TOOL, root, "compare -m %s -g %s -out %s", cap, cap, root),
			 124);
	/* ...and by a symlink that leads out of the packed directory. */
	ck_assert_int_eq(unlink(path), 0);
	snprintf(out, sizeof(out), "%s/elsewhere.seg", root);
	write_text(out, "not a segment of this capture");
	ck_assert_int_eq(symlink("../../elsewhere.seg", path), 0);
	ck_assert_int_eq(packed_readable(cap, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "outside the capture"), "%s", why);
	snprintf(out, sizeof(out), "%s/out2", root);
	ck_assert_int_eq(adump_unpack(cap, out), -EXDEV);
	t_rmtree(root);
	free(root);
}
END_TEST


/* @path: one plain dump of op @name. */
static void plain_make(const char *path, const char *name)
{
	struct adump_tensor t[1];
	struct adump_op op = { .op_type = "Add", .op_name = name, .tensors = t, .tensor_count = 1 };
	const void *data[1] = { values };
	size_t len;
	void *dump;
	FILE *f;

	t[0] = rt_tensor(ADUMP_TENSOR_OUTPUT, ADUMP_DT_FLOAT, 1, dims, sizeof(values));
	dump = rt_dump_mem(&op, data, &len);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(dump, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	free(dump);
}

/* Links inside a capture, to a dump and to a directory of dumps outside it, and a FIFO
 * named as a dump: scan and compare pass them by with a warning naming each (they read all
 * three dumps through the links before), verify reports each as not a regular file (it
 * passed the capture before). */
START_TEST(test_links_inside_capture)
{
	char *root = t_tmpdir("trust"), path[4400], *out;

	snprintf(path, sizeof(path), "%s/cap", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/cap/0", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/outside", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/cap/0/Add.in.1.1.1796390235057329", root);
	plain_make(path, "in");
	snprintf(path, sizeof(path), "%s/outside/Add.out.2.1.1796390235057330", root);
	plain_make(path, "out");
	snprintf(path, sizeof(path), "%s/outside/Add.out2.3.1.1796390235057331", root);
	plain_make(path, "out2");
	snprintf(path, sizeof(path), "%s/cap/0/Add.linked.9.9.9", root);
	ck_assert_int_eq(symlink("../../outside/Add.out.2.1.1796390235057330", path), 0);
	snprintf(path, sizeof(path), "%s/cap/0/out_dir", root);
	ck_assert_int_eq(symlink("../../outside", path), 0);

	snprintf(path, sizeof(path), "%s/cap", root);
	ck_assert_int_eq(t_run_tool(TOOL, root, "scan %s", path), 0);
	out = t_slurp(root, "stdout");
	ck_assert_msg(strstr(out, " 1 dumps"), "%s", out);
	free(out);
	out = t_slurp(root, "stderr");
	ck_assert_msg(strstr(out, "Add.linked.9.9.9: a symbolic link"), "%s", out);
	ck_assert_msg(strstr(out, "out_dir: a symbolic link"), "%s", out);
	free(out);
	ck_assert_int_eq(t_run_tool(TOOL, root, "verify %s", path), 1);
	out = t_slurp(root, "stdout");
	ck_assert_msg(strstr(out, "Add.linked.9.9.9: not a regular file"), "%s", out);
	ck_assert_msg(strstr(out, "out_dir: not a regular file"), "%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/cap/0/Add.fifo.8.8.8", root);
	ck_assert_int_eq(mkfifo(path, 0640), 0);
	snprintf(path, sizeof(path), "%s/cap", root);
	ck_assert_int_eq(t_run_tool(TOOL, root, "verify --json %s", path), 1);
	out = t_slurp(root, "stdout");
	ck_assert_msg(strstr(out, "Add.fifo.8.8.8: not a regular file"), "%s", out);
	free(out);
	ck_assert_int_eq(t_run_tool(TOOL, root, "scan %s", path), 0);
	out = t_slurp(root, "stdout");
	ck_assert_msg(strstr(out, " 1 dumps"), "%s", out);
	free(out);
	t_rmtree(root);
	free(root);
}
END_TEST

/* Writers create their directories below OUT without following a link planted there:
 * unpack into an OUT whose "0" is a link out, export into one whose step0/rank0 is (both
 * wrote through the link before); OUT itself may be a link. */
START_TEST(test_writers_refuse_links_in_out)
{
	char *root = t_tmpdir("trust"), cap[4400], path[4400], out[4400], far[4400];

	packed_make(root);
	snprintf(cap, sizeof(cap), "%s/cap", root);
	snprintf(far, sizeof(far), "%s/outside", root);
	ck_assert_int_eq(mkdir(far, 0750), 0);
	snprintf(out, sizeof(out), "%s/up", root);
	ck_assert_int_eq(mkdir(out, 0750), 0);
	snprintf(path, sizeof(path), "%s/up/0", root);
	ck_assert_int_eq(symlink(far, path), 0);
	ck_assert_int_eq(adump_unpack(cap, out), -ENOTDIR);
	ck_assert_uint_eq(t_count_files(far, ""), 0);
	ck_assert_int_eq(t_run_tool(TOOL, root, "unpack %s %s", cap, out), 1);
	ck_assert_uint_eq(t_count_files(far, ""), 0);
	/* OUT itself a link: followed, as the user named it. */
	snprintf(path, sizeof(path), "%s/up_link", root);
	ck_assert_int_eq(symlink(far, path), 0);
	ck_assert_int_eq(adump_unpack(cap, path), 1);
	ck_assert_uint_eq(t_count_files(far, ""), 1);

	/* export: <in>/step0/rank0/0/<dump>, OUT/step0/rank0 a link out */
	snprintf(path, sizeof(path), "%s/tc", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/tc/step0", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/tc/step0/rank0", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/tc/step0/rank0/Add.x.1.1.1796390235057329", root);
	plain_make(path, "x");
	snprintf(far, sizeof(far), "%s/outside_r", root);
	ck_assert_int_eq(mkdir(far, 0750), 0);
	snprintf(path, sizeof(path), "%s/ex", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/ex/step0", root);
	ck_assert_int_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/ex/step0/rank0", root);
	ck_assert_int_eq(symlink(far, path), 0);
	snprintf(path, sizeof(path), "%s/tc", root);
	snprintf(out, sizeof(out), "%s/ex", root);
	ck_assert_int_eq(t_run_tool(TOOL, root, "export --msprobe %s %s", path, out), 1);
	ck_assert_uint_eq(t_count_files(far, ""), 0);
	snprintf(out, sizeof(out), "%s/ex_ok", root);
	ck_assert_int_eq(t_run_tool(TOOL, root, "export --msprobe %s %s", path, out), 0);
	snprintf(out, sizeof(out), "%s/ex_ok/step0/rank0", root);
	ck_assert_uint_gt(t_count_files(out, "dump.json"), 0);
	t_rmtree(root);
	free(root);
}
END_TEST

/* Offset of the last central directory entry of the zip in @buf. */
static size_t last_cdir_entry(const unsigned char *buf, size_t len)
{
	size_t at = 0;

	for (size_t i = 0; i + 4 <= len; i++)
		if (buf[i] == 0x50 && buf[i + 1] == 0x4b && buf[i + 2] == 0x01 && buf[i + 3] == 0x02)
			at = i;
	ck_assert_uint_gt(at, 0);
	return at;
}

/* A .npy of @count float32 (element i is i) at @path. */
static void write_npy(const char *path, uint32_t count)
{
	char head[128];
	int len = snprintf(head + 10, sizeof(head) - 10, "{'descr': '<f4', 'fortran_order': "
			   "False, 'shape': (%u,), }", count);
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	while ((10 + len + 1) % 64)
		head[10 + len++] = ' ';
	head[10 + len++] = '\n';
	memcpy(head, "\x93NUMPY\x01\x00", 8);
	head[8] = (char)(len & 0xff);
	head[9] = (char)(len >> 8);
	ck_assert_uint_eq(fwrite(head, 1, (size_t)(10 + len), f), (size_t)(10 + len));
	for (uint32_t i = 0; i < count; i++) {
		float v = (float)i;

		ck_assert_uint_eq(fwrite(&v, sizeof(v), 1, f), 1);
	}
	ck_assert_int_eq(fclose(f), 0);
}

/* A .npy cut short after adump_reader_npy_map() (as by a writer while `adump compare A.npy
 * B.npy` runs): the elements read stay readable. They were mapped, and touching a page past
 * the new end was SIGBUS. */
START_TEST(test_npy_truncated_after_open)
{
	char *dir = t_tmpdir("trust"), path[4400], msg[512];
	struct adump_reader_npy n;
	const uint32_t count = 64 * 1024;

	snprintf(path, sizeof(path), "%s/a.npy", dir);
	write_npy(path, count);
	ck_assert_msg(adump_reader_npy_map(path, &n, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_uint_eq(n.count, count);
	ck_assert_int_eq(truncate(path, 0), 0);
	ck_assert_float_eq(((const float *)n.data)[count - 1], (float)(count - 1));
	adump_reader_npy_unmap(&n);
	/* Opened once it is cut: a clear error, not a crash. */
	ck_assert_int_eq(adump_reader_npy_map(path, &n, msg, sizeof(msg)), -ADUMP_ERR_CORRUPT);
	ck_assert_msg(strstr(msg, "a.npy: not a numpy file"), "%s", msg);
	write_npy(path, count);
	ck_assert_int_eq(truncate(path, 4096), 0);
	ck_assert_int_eq(adump_reader_npy_map(path, &n, msg, sizeof(msg)), -ADUMP_ERR_INCOMPLETE);
	ck_assert_msg(strstr(msg, "do not fit in the file"), "%s", msg);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_pt_check_name_length_lies)
{
	char *dir = t_tmpdir("trust"), path[4400], msg[512];
	unsigned char *buf;
	size_t len, at;
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.pt", dir);
	write_pt(path);
	ck_assert_int_eq(adump_pt_check(path, msg, sizeof(msg)), 0);
	buf = t_read_file(path, &len);
	ck_assert_uint_lt(len, 0xffff);
	at = last_cdir_entry(buf, len);
	/* The entry's name length claims 64 KiB: far past the file's end. */
	buf[at + 28] = 0xff;
	buf[at + 29] = 0xff;
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(adump_pt_check(path, msg, sizeof(msg)), -ADUMP_ERR_CORRUPT);
	ck_assert_msg(strstr(msg, "runs past"), "%s", msg);
	free(buf);
	t_rmtree(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reader_trust");
	TCase *tc = tcase_create("trust");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_msprobe_data_name_outside);
	tcase_add_test(tc, test_msprobe_pt_fifo);
	tcase_add_test(tc, test_packed_fifo_index);
	tcase_add_test(tc, test_packed_segment_refused);
	tcase_add_test(tc, test_links_inside_capture);
	tcase_add_test(tc, test_writers_refuse_links_in_out);
	tcase_add_test(tc, test_pt_check_name_length_lies);
	tcase_add_test(tc, test_npy_truncated_after_open);
	suite_add_tcase(s, tc);
	return t_run_suite(s);
}
