// SPDX-License-Identifier: MIT
/*
 * Replays a corpus through a libFuzzer target without libFuzzer: for each
 * regular file of DIR, in name order, call LLVMFuzzerTestOneInput once.
 * Linked with each test/fuzz/fuzz_*.c into build/test/fuzz_*-replay, so the
 * saved inputs run under `make unit` with any compiler.
 *
 *   usage: fuzz_NAME-replay DIR
 *   exit 0 after "N inputs replayed"; 2 on a usage error or an unreadable
 *   directory or file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* The whole file at @dirfd/@name in a malloc'd buffer (never NULL on
 * success, even when empty). 0 or a negative errno; -EISDIR etc. for things
 * that are not regular files. */
static int read_input(int dirfd, const char *name, uint8_t **data, size_t *size)
{
	struct stat st;
	uint8_t *buf;
	size_t n = 0;
	ssize_t got;
	int fd, ret;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out_close;
	}
	while (n < (size_t)st.st_size) {
		got = read(fd, buf + n, (size_t)st.st_size - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			ret = got < 0 ? -errno : -EIO;
			free(buf);
			goto out_close;
		}
		n += (size_t)got;
	}
	*data = buf;
	*size = n;
	ret = 0;
out_close:
	close(fd);
	return ret;
}

int main(int argc, char **argv)
{
	struct dirent **names;
	unsigned replayed = 0;
	int i, n, dirfd, ret, status = 0;
	uint8_t *data = NULL;
	size_t size = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	n = scandir(argv[1], &names, NULL, by_name);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		close(dirfd);
		return 2;
	}
	for (i = 0; i < n; i++) {
		const char *name = names[i]->d_name;

		if (name[0] == '.')
			continue;
		ret = read_input(dirfd, name, &data, &size);
		if (ret == -EISDIR)
			continue;
		if (ret) {
			fprintf(stderr, "%s/%s: %s\n", argv[1], name, strerror(-ret));
			status = 2;
			break;
		}
		LLVMFuzzerTestOneInput(data, size);
		free(data);
		replayed++;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(dirfd);
	if (!status)
		printf("%u inputs replayed\n", replayed);
	return status;
}
