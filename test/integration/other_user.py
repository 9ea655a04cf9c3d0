"""Running the checkout's own files as another user (nobody) from any
checkout location. A checkout may live in a folder only root may enter
(/root is 0700 on Debian), where another user cannot even open the file:
the file is copied byte for byte into a folder of its own that every user
may enter, and run from there, so that what is tested is still the real
file's behaviour as that user."""
import contextlib
import os
import shutil
import tempfile

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@contextlib.contextmanager
def world_copy(path):
    """A copy of @path, mode 0755, in a fresh 0755 folder under /tmp; the
    folder is removed afterwards. Run it with cwd= its folder: the caller's
    working directory may be the unreachable checkout."""
    d = tempfile.mkdtemp(prefix="ibres-as-user-", dir="/tmp")
    try:
        os.chmod(d, 0o755)
        dst = os.path.join(d, os.path.basename(path))
        shutil.copyfile(path, dst)
        os.chmod(dst, 0o755)
        yield dst
    finally:
        shutil.rmtree(d, ignore_errors=True)
