/* fakesys.h - build a fake sysfs tree for the topology tests, in a fresh temp directory.
 *
 * The tree mirrors what Linux shows (paths trimmed where nothing reads them):
 *   sda (8:0, rotational) with partitions sda1 (8:1), sda2 (8:2)   - a SATA disk
 *   sdb (8:16, rotational) with partition sdb1 (8:17)
 *   sdc (8:32, no queue/rotational file) with partition sdc1 (8:33)
 *   vda (254:0, rotational) with vda1 (254:1), vda2 (254:2)     - a virtio disk
 *   nvme0n1 (259:1, not rotational) with nvme0n1p2 (259:3)        - an NVMe namespace
 *   loop1 (7:1, virtual, rotational) with loop1p1 (259:0)         - a loop device
 *   dm-0 (253:0): slaves sda, sdb                                  - dm over two disks
 *   dm-1 (253:1): slaves dm-0                                      - dm over dm
 *   md0 (9:0): slaves sda2, sdb1                                   - md over two partitions
 *   dm-9 (253:9): slaves dm-9                                      - a cycle (broken tree)
 *   dm-8 (253:8): slaves ghost -> nowhere                          - a dangling slave
 * /dev/block links are relative, as the kernel makes them; slaves links are absolute.
 * Local to the test process.
 */
#ifndef DSORT_TEST_FAKESYS_H
#define DSORT_TEST_FAKESYS_H

#include <stddef.h>

/* Make a fresh directory under $TMPDIR (or /tmp) into buf; 0 on success. */
int fakesys_tmpdir(char *buf, size_t len, const char *tag);
/* Build the tree above under root (which exists); 0 on success. */
int fakesys_build(const char *root);
/* rm -rf dir; 0 on success. */
int fakesys_remove(const char *dir);
/* Write text to a file (creating parent directories); 0 on success. */
int fakesys_write(const char *path, const char *text);

#endif
