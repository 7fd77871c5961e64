"""Packs the built extension and the Python layer into a wheel (run by `cargo xtask wheel`).

A wheel is a zip of the package and a .dist-info folder (METADATA, WHEEL, RECORD with a sha256 of
every file). The extension uses CPython's stable ABI from 3.9 (pyo3's abi3-py39), so one wheel,
tagged cp39-abi3, serves every CPython from 3.9 on this platform.
"""

import argparse
import base64
import hashlib
import pathlib
import platform
import sys
import zipfile

NAME = "rust_kernels"
HERE = pathlib.Path(__file__).resolve().parent


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, type=pathlib.Path, help="the built lib_native.so")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="the folder for the wheel")
    parser.add_argument("--version", required=True)
    args = parser.parse_args()
    if sys.platform != "linux":
        sys.exit(f"build_wheel.py: only Linux wheels are built here, not {sys.platform}")
    tag = f"cp39-abi3-linux_{platform.machine()}"
    dist_info = f"{NAME}-{args.version}.dist-info"
    files = {f"{NAME}/{p.name}": p.read_bytes() for p in sorted((HERE / NAME).glob("*.py"))}
    files[f"{NAME}/_native.abi3.so"] = args.lib.read_bytes()
    files[f"{dist_info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {args.version}\n"
        "Summary: GPU kernels written in Rust, as PyTorch operators\n"
        "Requires-Python: >=3.9\n"
        "License: MIT OR Apache-2.0\n"
    ).encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: {NAME}/build_wheel.py\nRoot-Is-Purelib: false\nTag: {tag}\n"
    ).encode()
    record = [record_line(path, data) for path, data in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    args.out.mkdir(parents=True, exist_ok=True)
    wheel = args.out / f"{NAME}-{args.version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    print(wheel)


if __name__ == "__main__":
    main()
