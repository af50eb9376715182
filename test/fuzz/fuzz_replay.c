/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A main() for a fuzz target without libFuzzer (the gcc ASan test build):
 * runs LLVMFuzzerTestOneInput once on every file named, or in a directory
 * named, so the corpus and its regression inputs replay in `meson test`.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned int
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
		exit(1);
	}
	buf = malloc((size_t)len + 1);
	if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 1;
}

static int
by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int
main(int argc, char **argv)
{
	unsigned int n = 0;
	int i;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		struct dirent **ents;
		struct stat st;
		int k, m;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "fuzz_replay: no %s\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			n += run_file(argv[i]);
			continue;
		}
		m = scandir(argv[i], &ents, NULL, by_name);
		if (m < 0)
			return 1;
		for (k = 0; k < m; k++) {
			char path[4096];

			if (ents[k]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i], ents[k]->d_name);
				n += run_file(path);
			}
			free(ents[k]);
		}
		free(ents);
	}
	printf("fuzz_replay: %u inputs, no failure\n", n);
	return n > 0 ? 0 : 1;
}
