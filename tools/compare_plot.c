/* SPDX-License-Identifier: Apache-2.0 */
/* `adump compare --plot`: cosine and max relative error per row along the op order, the first
 * divergent op marked, drawn by gnuplot. What comes from the dumps (op names) reaches gnuplot
 * as data only: a data file it plots with labels, never script text. The script is fixed text
 * with numbers and fixed names in a private directory (mkdtemp, in -out so the images are
 * renamed, not copied, into place); gnuplot runs from there by fork and exec, no shell. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "tools/compare_out.h"

static const char *const plot_names[] = { "rows.dat", "label.dat", "plot.gp", "plot.png",
					  "plot.svg" };

/* @text into @f as one tab-separated field: the tabs and line ends it holds become spaces. */
static void data_text(FILE *f, const char *text)
{
	for (; *text; text++)
		fputc(*text == '\t' || *text == '\n' || *text == '\r' ? ' ' : *text, f);
}

/* A new file @name in @dir_fd for stdio, or NULL with errno set. */
static FILE *plot_file(int dir_fd, const char *name)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

static int plot_close(FILE *f)
{
	int ret = ferror(f) ? -EIO : 0;

	if (fclose(f) != 0 && ret == 0)
		ret = errno ? -errno : -EIO;
	return ret;
}

static int write_rows(int dir_fd, const struct adump_compare *c,
		      const struct adump_compare_summary *s)
{
	FILE *f = plot_file(dir_fd, "rows.dat");

	if (!f)
		return -errno;
	for (uint64_t r = 0; r < adump_compare_row_count(c); r++) {
		const struct adump_compare_row *row = adump_compare_row(c, r);

		fprintf(f, "%llu\t%llu\t%.9g\t%.9g\n", (unsigned long long)r,
			(unsigned long long)row->index, isnan(row->cosine) ? NAN : row->cosine,
			isnan(row->max_relative_error) ? NAN : row->max_relative_error);
	}
	if (plot_close(f) < 0)
		return -EIO;
	f = plot_file(dir_fd, "label.dat");
	if (!f)
		return -errno;
	if (s->first_divergent_row >= 0) {
		const struct adump_compare_row *row =
			adump_compare_row(c, (uint64_t)s->first_divergent_row);

		/* The text starts with a letter: gnuplot reads a field that starts with a
		 * quote as a quoted string. */
		fprintf(f, "%lld\t1.01\tfirst divergent: Index %llu ", (long long)s->first_divergent_row,
			(unsigned long long)row->index);
		data_text(f, row->op_name);
		fprintf(f, " (%s)\n", adump_compare_verdict_name(row->verdict));
	}
	return plot_close(f);
}

/* The script: fixed text, numbers and the fixed names of plot_names[]. */
static int write_script(int dir_fd, const struct adump_compare *c,
			const struct adump_compare_summary *s, const char *png_term)
{
	bool has_rel = false;
	FILE *f;

	/* The log-scale axis only where a row has an error above 0 to draw on it: gnuplot fails
	 * on a series with no defined point (two identical captures). */
	for (uint64_t r = 0; r < adump_compare_row_count(c) && !has_rel; r++)
		has_rel = adump_compare_row(c, r)->max_relative_error > 0;

	unlinkat(dir_fd, "plot.gp", 0);
	f = plot_file(dir_fd, "plot.gp");
	if (!f)
		return -errno;
	fprintf(f, "set datafile separator \"\\t\"\nset datafile missing 'nan'\n"
		   "set xlabel 'row (op order: inputs, then outputs of each op)'\n"
		   "set ylabel 'CosineSimilarity'\nset grid\nset key bottom left\n"
		   "set yrange [*:1.02]\n");
	if (has_rel)
		fprintf(f, "set y2label 'MaxRelativeError'\nset ytics nomirror\nset y2tics\n"
			   "set logscale y2\n");
	if (s->first_divergent_row >= 0)
		fprintf(f, "set arrow from %lld, graph 0 to %lld, graph 1 nohead lc rgb 'red' lw 2\n",
			(long long)s->first_divergent_row, (long long)s->first_divergent_row);
	fprintf(f, "set title 'adump compare: %llu ops, %llu tensors' noenhanced\n",
		(unsigned long long)s->op_count, (unsigned long long)s->tensor_count);
	for (int k = 0; k < 2; k++) {
		fprintf(f, "set terminal %s size 1200,600\nset output '%s'\n", k ? "svg" : png_term,
			k ? "plot.svg" : "plot.png");
		fprintf(f, "plot 'rows.dat' using 1:3 with linespoints pt 7 ps 0.5 lc rgb '#1f77b4' "
			   "title 'CosineSimilarity'%s%s\n",
			has_rel ? ", '' using 1:($4 > 0 ? $4 : 1/0) axes x1y2 with points pt 2 ps 1 "
				  "lc rgb '#ff7f0e' title 'MaxRelativeError (> 0)'"
				: "",
			s->first_divergent_row >= 0 ? ", 'label.dat' using 1:2:3 with labels left "
						      "offset 1,0 tc rgb 'red' noenhanced notitle"
						    : "");
	}
	fprintf(f, "unset output\n");
	return plot_close(f);
}

/* gnuplot plot.gp run in @dir_fd, its output on stderr. Return: its exit status, 127 when it
 * cannot be run, or -errno. */
static int run_gnuplot(int dir_fd)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *argv[] = { "gnuplot", "plot.gp", NULL };

		if (fchdir(dir_fd) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int compare_plot(const struct adump_compare *c, const struct adump_compare_summary *s,
		 const char *dir, const char *stamp, char *msg, size_t cap)
{
	char tmp[4096], png[4200], svg[4200];
	int out_fd = -1, dir_fd = -1, ret, status = 0;

	if (snprintf(tmp, sizeof(tmp), "%s/.adump-plot-XXXXXX", dir) >= (int)sizeof(tmp)) {
		snprintf(msg, cap, "%s: name too long", dir);
		return -ENAMETOOLONG;
	}
	out_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (out_fd < 0 || !mkdtemp(tmp)) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", dir, strerror(errno));
		goto out;
	}
	dir_fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir_fd < 0) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", tmp, strerror(errno));
		goto out_rm;
	}
	ret = write_rows(dir_fd, c, s);
	if (ret == 0)
		ret = write_script(dir_fd, c, s, "pngcairo");
	if (ret < 0) {
		snprintf(msg, cap, "%s: %s", tmp, strerror(-ret));
		goto out_rm;
	}
	status = run_gnuplot(dir_fd);
	if (status > 0 && status != 127) {
		/* pngcairo may be missing (gnuplot-nox has it; some builds do not): plain png. */
		ret = write_script(dir_fd, c, s, "png");
		if (ret == 0)
			status = run_gnuplot(dir_fd);
	}
	if (ret == 0 && status != 0) {
		snprintf(msg, cap, status == 127 ? "gnuplot cannot be run; is it installed?"
						 : "gnuplot failed (status %d)", status);
		ret = status < 0 ? status : -ECHILD;
		goto out_rm;
	}
	/* Renamed into place: a link planted at either name is replaced, not followed. */
	snprintf(png, sizeof(png), "compare_%s.png", stamp);
	snprintf(svg, sizeof(svg), "compare_%s.svg", stamp);
	if (renameat(dir_fd, "plot.png", out_fd, png) < 0 ||
	    renameat(dir_fd, "plot.svg", out_fd, svg) < 0) {
		ret = -errno;
		snprintf(msg, cap, "%s: %s", dir, strerror(errno));
		goto out_rm;
	}
	snprintf(msg, cap, "%.4000s/%s, %.4000s/%s", dir, png, dir, svg);
out_rm:
	for (size_t i = 0; dir_fd >= 0 && i < sizeof(plot_names) / sizeof(plot_names[0]); i++)
		unlinkat(dir_fd, plot_names[i], 0);
	rmdir(tmp);
out:
	if (dir_fd >= 0)
		close(dir_fd);
	if (out_fd >= 0)
		close(out_fd);
	return ret;
}
