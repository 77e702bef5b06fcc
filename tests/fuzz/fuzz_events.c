/* tests/fuzz/fuzz_events.c - the event-name resolver (ps_event_resolve) and the sysfs PMU
 * term parser behind it, against a PMU directory made for the run.
 *
 * Input: "FORMAT\nALIAS\nNAME" - FORMAT becomes cpu/format/fz (a field layout such as
 * "config:0-7,32-35"), ALIAS cpu/events/fz (terms such as "event=0xc0,umask=1"), and NAME is
 * resolved. An input without a newline is a NAME alone, with no fz files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events.h"
#include "fuzz.h"
#include "sysfs_pmu.h"

static char root[64];

static void put(const char *rel, const char *text, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", root, rel);
	if (!(f = fopen(path, "w")))
		return;
	fwrite(text, 1, n, f);
	fclose(f);
}

static void drop(const char *rel)
{
	char path[128];

	snprintf(path, sizeof path, "%s/%s", root, rel);
	unlink(path);
}

static const char *dirs[] = {"cpu", "cpu/format", "cpu/events"};
static const char *files[] = {"cpu/type",	  "cpu/format/event", "cpu/format/umask",	 "cpu/format/cmask",
			      "cpu/format/ldlat", "cpu/format/fz",    "cpu/events/instructions", "cpu/events/fz"};

static void remove_root(void)
{
	char path[128];

	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		drop(files[i]);
	for (int i = 2; i >= 0; i--) {
		snprintf(path, sizeof path, "%s/%s", root, dirs[i]);
		rmdir(path);
	}
	rmdir(root);
}

/* A PMU "cpu" of type 4 with a few format fields and one named event. */
static int make_root(void)
{
	char d[128];

	snprintf(root, sizeof root, "/tmp/ps-fuzz-sysfs-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	for (int i = 0; i < 3; i++) {
		snprintf(d, sizeof d, "%s/%s", root, dirs[i]);
		mkdir(d, 0755);
	}
	put("cpu/type", "4\n", 2);
	put("cpu/format/event", "config:0-7,32-35\n", 17);
	put("cpu/format/umask", "config:8-15\n", 12);
	put("cpu/format/cmask", "config:24-31\n", 13);
	put("cpu/format/ldlat", "config1:0-15\n", 13);
	put("cpu/events/instructions", "event=0xc0\n", 11);
	atexit(remove_root);
	ps_sysfs_set_root(root);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	const char *text, *nl1, *nl2 = NULL;
	struct ps_event ev;
	struct ps_error err;
	char *name;

	if (!ready)
		ready = make_root() == 0 ? 1 : -1;
	if (ready < 0 || !(name = malloc(size + 1)))
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	text = name;
	drop("cpu/format/fz");
	drop("cpu/events/fz");
	if ((nl1 = memchr(name, '\n', size)) && (nl2 = strchr(nl1 + 1, '\n'))) {
		put("cpu/format/fz", name, (size_t)(nl1 - name));
		put("cpu/events/fz", nl1 + 1, (size_t)(nl2 - nl1 - 1));
		text = nl2 + 1;
	}
	if (ps_event_resolve(text, &ev, &err) == 0 && strcmp(ev.name, text))
		__builtin_trap(); /* a resolved event keeps the name it was given */
	free(name);
	return 0;
}
