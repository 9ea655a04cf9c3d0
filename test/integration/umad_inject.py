#!/usr/bin/python3
"""Send forged SA responses to a LID through libibumad, as a simulated host
(run under test/fabric/ibsim exec): two GetResp MADs with transaction ids
nobody asked for, and one cut inside its header.

  umad_inject.py DLID
"""
import ctypes
import struct
import sys
import time

QP1_QKEY = 0x80010000


def main():
    dlid = int(sys.argv[1])
    lib = ctypes.CDLL("libibumad.so.3")
    if lib.umad_init() < 0:
        sys.exit("umad_init failed")
    port = lib.umad_open_port(b"ibsim0", 1)
    if port < 0:
        sys.exit("umad_open_port failed")
    agent = lib.umad_register(port, 3, 2, 0, None)
    if agent < 0:
        sys.exit("umad_register failed")
    size = lib.umad_size()
    lib.umad_get_mad.restype = ctypes.c_void_p
    # ibsim hands a response to the client whose index is in the TID's top
    # 16 bits (the next 16 pick the receiver's agent, 0 = its first): the
    # daemon's index is not known here, so each MAD goes to every index
    for length, tid in ((256, 0x0abcdef0), (256, 0x0abcdef1), (20, 0x0abcdef2)):
        for client in range(10):
            buf = ctypes.create_string_buffer(size + 256)
            mad = struct.pack(">BBBBHHQHHI", 1, 3, 2, 0x81, 0, 0, client << 48 | tid, 0x35,
                              0, 0).ljust(256, b"\0")
            ctypes.memmove(lib.umad_get_mad(buf), mad, len(mad))
            lib.umad_set_addr(buf, dlid, 1, 0, QP1_QKEY)
            if lib.umad_send(port, agent, buf, length, 0, 0) < 0:
                sys.exit("umad_send failed")
    # ibsim drops what a client sent but it has not read yet once the client
    # disconnects (at exit): give it time to forward everything
    time.sleep(0.5)
    print("sent 3")


if __name__ == "__main__":
    main()
