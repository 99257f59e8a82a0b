"""A file system that loses what was never synced, as a machine does when its power is cut.

    python lossyfs.py BACKING MOUNTPOINT [--writeback P]

Mounts BACKING at MOUNTPOINT (FUSE, in the foreground). What a process writes through the mount
stays in this process's memory, page by page, until the process syncs the file (fsync or
fdatasync); only then does it reach BACKING. Killing this process with SIGKILL is a power cut:
every write not synced is gone, and BACKING holds exactly what a disk would after the cut (then
`fusermount3 -u -z MOUNTPOINT` and mount again). Creating, renaming and removing files reach
BACKING at once, as a journaling file system's metadata does once its directory is synced; only
file contents are held back. Truncating is held back like a write. Hard links share one file's
contents, held back once for all its names, as an inode's pages are.

With --writeback P, each write is followed, with probability P, by one page of the file not yet
synced, chosen at random, reaching BACKING on its own, as the kernel writes dirty pages back in
no particular order: a cut then leaves some later pages of a file and not earlier ones (a hole
of zeros where the file had not reached before).

Used by Tests/IntegrationTests/PowerLossTests.swift, in the manner of LazyFS in etcd's
robustness tests.
"""

import errno
import os
import random
import sys

from mfusepy import FUSE, FuseOSError, Operations

PAGE = 4096


class Contents:
    """A file's contents as processes see them: BACKING's file, with the pages written and the
    truncation made since the last sync laid over it."""

    def __init__(self, backing):
        self.backing = backing
        self.size = os.path.getsize(backing)
        # Bytes of the backing file from this offset on read as zeros: it was truncated there.
        self.visible_durable = self.size
        self.pages = {}

    def _durable_page(self, index):
        start = index * PAGE
        with open(self.backing, "rb") as file:
            file.seek(start)
            data = bytearray(file.read(PAGE))
        keep = max(0, min(len(data), self.visible_durable - start))
        data[keep:] = bytes(len(data) - keep)
        data.extend(bytes(PAGE - len(data)))
        return data

    def _page(self, index):
        page = self.pages.get(index)
        if page is None:
            page = self._durable_page(index)
            self.pages[index] = page
        return page

    def read(self, size, offset):
        end = min(offset + size, self.size)
        out = bytearray()
        position = offset
        while position < end:
            index, within = divmod(position, PAGE)
            take = min(PAGE - within, end - position)
            page = self.pages.get(index)
            if page is None:
                page = self._durable_page(index)
            out += page[within:within + take]
            position += take
        return bytes(out)

    def write(self, data, offset):
        position = offset
        view = memoryview(data)
        while view:
            index, within = divmod(position, PAGE)
            take = min(PAGE - within, len(view))
            self._page(index)[within:within + take] = view[:take]
            view = view[take:]
            position += take
        self.size = max(self.size, offset + len(data))
        return len(data)

    def truncate(self, length):
        if length < self.size:
            for index in [index for index in self.pages if index * PAGE >= length]:
                del self.pages[index]
            index, within = divmod(length, PAGE)
            if within and index in self.pages:
                self.pages[index][within:] = bytes(PAGE - within)
            self.visible_durable = min(self.visible_durable, length)
        self.size = length

    def write_back_one(self, chooser):
        """Writes one page not yet synced, chosen by `chooser`, to BACKING, as the kernel's
        writeback may; nothing while a truncation is held back (its page would be stale)."""
        if not self.pages or self.visible_durable != os.path.getsize(self.backing):
            return
        index = chooser.choice(sorted(self.pages))
        start = index * PAGE
        data = self.pages[index][:max(0, min(PAGE, self.size - start))]
        if not data:
            return
        with open(self.backing, "r+b") as file:
            file.seek(start)
            file.write(data)
        self.visible_durable = os.path.getsize(self.backing)

    def sync(self):
        with open(self.backing, "r+b") as file:
            file.truncate(min(self.visible_durable, os.path.getsize(self.backing)))
            for index in sorted(self.pages):
                file.seek(index * PAGE)
                file.write(self.pages[index])
            file.truncate(self.size)
            file.flush()
            os.fsync(file.fileno())
        self.pages.clear()
        self.visible_durable = self.size


class LossyFileSystem(Operations):
    use_ns = True

    def __init__(self, root, writeback=0.0):
        self.root = os.path.realpath(root)
        # By BACKING's inode number: a file's names share its contents.
        self.files = {}
        # The names each of those files was reached by, to write it back through another name
        # once one is removed.
        self.names = {}
        self.writeback = writeback
        self.chooser = random.Random()

    def _backing(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def _inode(self, path):
        return self._os(os.lstat, self._backing(path)).st_ino

    def _contents(self, path):
        inode = self._inode(path)
        contents = self.files.get(inode)
        if contents is None:
            contents = Contents(self._backing(path))
            self.files[inode] = contents
        self.names.setdefault(inode, set()).add(path)
        return contents

    def _forget_name(self, inode, path, links_before):
        """`path` no longer names the file `inode`, which had `links_before` names."""
        names = self.names.get(inode, set())
        names.discard(path)
        contents = self.files.get(inode)
        if links_before <= 1:
            self.files.pop(inode, None)
            self.names.pop(inode, None)
        elif contents is not None and contents.backing == self._backing(path):
            other = next(iter(names), None) or self._find_name(inode)
            if other is None:
                self.files.pop(inode, None)
            else:
                contents.backing = self._backing(other)

    def _find_name(self, inode):
        for directory, _, names in os.walk(self.root):
            for name in names:
                backing = os.path.join(directory, name)
                if os.lstat(backing).st_ino == inode:
                    return "/" + os.path.relpath(backing, self.root)
        return None

    @staticmethod
    def _os(call, *arguments):
        try:
            return call(*arguments)
        except OSError as error:
            raise FuseOSError(error.errno) from error

    def getattr(self, path, fh=None):
        status = self._os(os.lstat, self._backing(path))
        attributes = {key: getattr(status, key) for key in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size")}
        for key in ("st_atime", "st_mtime", "st_ctime"):
            attributes[key] = getattr(status, key + "_ns")
        contents = self.files.get(status.st_ino)
        if contents is not None:
            attributes["st_size"] = contents.size
        return attributes

    def readdir(self, path, fh):
        return [".", ".."] + self._os(os.listdir, self._backing(path))

    def access(self, path, mode):
        if not os.access(self._backing(path), mode):
            raise FuseOSError(errno.EACCES)
        return 0

    def statfs(self, path):
        status = self._os(os.statvfs, self._backing(path))
        return {
            key: getattr(status, key)
            for key in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")
        }

    def chmod(self, path, mode):
        return self._os(os.chmod, self._backing(path), mode) or 0

    def chown(self, path, uid, gid):
        return self._os(os.chown, self._backing(path), uid, gid) or 0

    def utimens(self, path, times=None):
        return self._os(lambda: os.utime(self._backing(path), ns=times)) or 0

    def mkdir(self, path, mode):
        return self._os(os.mkdir, self._backing(path), mode) or 0

    def rmdir(self, path):
        return self._os(os.rmdir, self._backing(path)) or 0

    def unlink(self, path):
        status = self._os(os.lstat, self._backing(path))
        self._os(os.unlink, self._backing(path))
        self._forget_name(status.st_ino, path, status.st_nlink)
        return 0

    def rename(self, old, new):
        moved = self._os(os.lstat, self._backing(old))
        try:
            replaced = os.lstat(self._backing(new))
        except FileNotFoundError:
            replaced = None
        self._os(os.rename, self._backing(old), self._backing(new))
        if replaced is not None and replaced.st_ino != moved.st_ino:
            self._forget_name(replaced.st_ino, new, replaced.st_nlink)
        names = self.names.setdefault(moved.st_ino, set())
        names.discard(old)
        names.add(new)
        contents = self.files.get(moved.st_ino)
        if contents is not None and contents.backing == self._backing(old):
            contents.backing = self._backing(new)
        return 0

    def link(self, target, source):
        """`target`, a new name, for the file `source` names (`ln source target`)."""
        self._os(os.link, self._backing(source), self._backing(target))
        self.names.setdefault(self._inode(source), set()).update([source, target])
        return 0

    def create(self, path, mode, fi=None):
        descriptor = self._os(os.open, self._backing(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        os.close(descriptor)
        inode = self._inode(path)
        self.files[inode] = Contents(self._backing(path))
        self.names[inode] = {path}
        return 0

    def open(self, path, flags):
        if not os.path.exists(self._backing(path)):
            raise FuseOSError(errno.ENOENT)
        if flags & os.O_TRUNC:
            self._contents(path).truncate(0)
        return 0

    def read(self, path, size, offset, fh):
        return self._contents(path).read(size, offset)

    def write(self, path, data, offset, fh):
        contents = self._contents(path)
        written = contents.write(data, offset)
        if self.writeback and self.chooser.random() < self.writeback:
            self._os(contents.write_back_one, self.chooser)
        return written

    def truncate(self, path, length, fh=None):
        self._contents(path).truncate(length)
        return 0

    def fsync(self, path, datasync, fh):
        contents = self.files.get(self._inode(path))
        if contents is not None:
            self._os(contents.sync)
        return 0

    def fsyncdir(self, path, datasync, fh):
        return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    writeback = 0.0
    if len(arguments) == 4 and arguments[2] == "--writeback":
        writeback = float(arguments.pop(3))
        arguments.pop(2)
    if len(arguments) != 2 or not 0 <= writeback <= 1:
        sys.exit("usage: lossyfs.py BACKING MOUNTPOINT [--writeback P]  (0 <= P <= 1)")
    # One thread: the kernel queues the requests, and the pages need no lock.
    FUSE(LossyFileSystem(arguments[0], writeback), arguments[1], foreground=True, nothreads=True)
