/* SPDX-License-Identifier: Apache-2.0 */
/* tests/report/: a page opened in headless Chromium as a person would see it: its DOM after the
 * scripts ran (--dump-dom), the console messages it logged, the network requests it made (the
 * net log), and a screenshot kept in the test's output directory. */
#ifndef ADUMP_TEST_REPORT_BROWSER_H
#define ADUMP_TEST_REPORT_BROWSER_H

#include <stdbool.h>

#define BROWSER_PATH "/usr/bin/chromium"

struct browser_page {
	char *dom;                      /* the DOM serialized after the scripts ran */
	char *console;                  /* the console messages, one a line ("" for none) */
	char *requests;                 /* http(s) URLs the page asked for, one a line */
};

/* Whether Chromium is there to run (else the suite skips, saying why). */
bool browser_is_present(void);

/* Open file://@path@fragment (fragment: "" or "#q=..."), with a fresh profile under @work;
 * when @screenshot is set, also save a 1280x1000 screenshot there. Chromium's own background
 * requests (Google's update and time services) are not the page's and are left out. */
void browser_open(const char *work, const char *path, const char *fragment,
		  const char *screenshot, struct browser_page *out);
void browser_page_free(struct browser_page *p);

/* The text of the element whose id is @id in @dom, tags dropped, entities left as they are;
 * NULL when absent. Caller frees. */
char *browser_element_text(const char *dom, const char *id);

#endif
