/* tests/c/test_inproc_sites.c - the sites perfsh lists for the in-process agent
 * (core/catch/marker/inproc_sites.c): a range's end and start at one address made one site, an
 * entry listed once, two patches over the same bytes refused, a failed region's sites taken out. */
#include "ctest.h"

#include <stdlib.h>

#include "inproc_site.h"

/* A site named @name at @addr whose patch takes [@patch, @patch + @len), with @flags. */
static struct ps_mshm_site site(const char *name, uint64_t addr, uint64_t patch, unsigned len, unsigned flags)
{
	struct ps_mshm_site s;

	memset(&s, 0, sizeof s);
	snprintf(s.name, sizeof s.name, "%s", name);
	s.addr = addr;
	s.patch = patch;
	s.len = len;
	s.flags = flags;
	return s;
}

/* A control block with @n sites added, each with result @rc[i] checked. */
static struct ps_mshm_ctl *with_sites(struct ctest *ctest_self, const struct ps_mshm_site *s, const int *rc, int n)
{
	struct ps_mshm_ctl *c = calloc(1, sizeof *c);
	struct ps_error err;

	CHECK(c != NULL);
	for (int i = 0; c && i < n; i++)
		CHECK_EQ_INT(ps_inproc_sites_add(c, &s[i], &err), rc[i]);
	return c;
}

TEST(inproc_sites_merge_a_ranges_end_and_start_at_one_address_and_list_an_entry_once)
{
	const struct ps_mshm_site s[] = {site("f", 0x1000, 0x1004, 5, 0), site("f", 0x1000, 0x1004, 5, 0),
					 site("a.c:3-4", 0x1020, 0x1020, 6, PS_MSHM_SITE_END),
					 site("a.c:3-4", 0x1020, 0x1020, 6, PS_MSHM_SITE_START)};
	struct ps_mshm_ctl *c = with_sites(ctest_self, s, (const int[]){1, 0, 1, 0}, 4);

	if (!c)
		return;
	CHECK_EQ_INT((int)c->nsites, 2);
	CHECK_EQ_INT((int)c->sites[1].flags, PS_MSHM_SITE_START | PS_MSHM_SITE_END);
	CHECK(ps_inproc_sites_named(c, "a.c:3-4") && !ps_inproc_sites_named(c, "g"));
	free(c);
}

TEST(inproc_sites_refuse_two_patches_over_the_same_bytes_in_one_line_naming_uprobe)
{
	static const struct {
		const char *name;
		uint64_t addr, patch;
		unsigned len, flags;
		int rc;
	} rows[] = {
	    {"a.c:1-2", 0x1005, 0x1005, 5, PS_MSHM_SITE_START, -1}, /* inside f's entry patch [0x1004, 0x1009) */
	    {"a.c:1-2", 0x1000, 0x1000, 5, PS_MSHM_SITE_END, -1},   /* f's entry, its endbr64 before the patch */
	    {"a.c:5-6", 0x1010, 0x1010, 5, PS_MSHM_SITE_START, -1}, /* another range's point at its address */
	    {"a.c:1-2", 0x1009, 0x1009, 5, PS_MSHM_SITE_START, 1},  /* right after f's patch */
	    {"g", 0x1015, 0x1015, 5, 0, 1},			    /* an entry right after the range's point */
	};
	const struct ps_mshm_site fp[] = {site("f", 0x1000, 0x1004, 5, 0),
					  site("a.c:5-6", 0x1010, 0x1010, 5, PS_MSHM_SITE_END)};
	struct ps_mshm_ctl *c = with_sites(ctest_self, fp, (const int[]){1, 1}, 2);
	struct ps_error err;

	if (!c)
		return;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct ps_mshm_site s = site(rows[i].name, rows[i].addr, rows[i].patch, rows[i].len, rows[i].flags);
		struct ps_mshm_site q = s;

		q.name[0] = 'x'; /* the same bytes under another name are refused too */
		CHECK_EQ_INT(ps_inproc_sites_add(c, rows[i].rc < 0 ? &q : &s, &err), rows[i].rc);
		if (rows[i].rc < 0) {
			CHECK_EQ_INT(err.code, PS_ENEEDS_UPROBE);
			CHECK(strstr(err.msg, "would be patched over the same bytes; use --backend uprobe") != NULL);
			CHECK(strchr(err.msg, '\n') == NULL);
		}
	}
	CHECK_EQ_INT((int)c->nsites, 4);
	free(c);
}

TEST(inproc_sites_drop_takes_out_the_last_sites_of_a_region_that_failed_to_arm)
{
	const struct ps_mshm_site s[] = {site("f", 0x1000, 0x1000, 5, 0),
					 site("a.c:1-9", 0x1010, 0x1010, 5, PS_MSHM_SITE_END),
					 site("a.c:1-9", 0x1020, 0x1020, 5, PS_MSHM_SITE_START)};
	struct ps_mshm_ctl *c = with_sites(ctest_self, s, (const int[]){1, 1, 1}, 3);

	if (!c)
		return;
	ps_inproc_sites_drop(c, "a.c:1-9");
	CHECK_EQ_INT((int)c->nsites, 1);
	CHECK_STR(c->sites[0].name, "f");
	CHECK(c->sites[1].addr == 0 && c->sites[2].addr == 0);
	free(c);
}
