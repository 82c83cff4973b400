"""Reader and writer for axonn tensor files (the format of src/axonn/io/tensor_file.cpp), in PyTorch.

Layout, little-endian: b"AXONNTNS"; u32 version (1); u32 count; then per tensor:
u32 name_length, name (UTF-8), u32 dtype, u32 ndim, i64 dims[ndim] (ndim 0 = scalar), raw row-major data.
The Python side of the parity test uses these so that it never has to trust the C++ reader.
"""

import struct

import torch

MAGIC = b"AXONNTNS"
VERSION = 1

# Codes follow axonn::DType {f32, f64, bf16, i32}; bf16 is read/written too, though the oracle never needs it.
_CODE_TO_DTYPE = {0: torch.float32, 1: torch.float64, 2: torch.bfloat16, 3: torch.int32}
_DTYPE_TO_CODE = {dtype: code for code, dtype in _CODE_TO_DTYPE.items()}


class TensorFileError(ValueError):
    pass


def read_tensor_file(path):
    """Returns {name: torch.Tensor} in file order; raises TensorFileError on any malformed input."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(n):
        nonlocal pos
        if pos + n > len(data):
            raise TensorFileError(f"tensor file {path} is truncated")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    def u32():
        return struct.unpack("<I", take(4))[0]

    if take(8) != MAGIC:
        raise TensorFileError(f"{path} is not an axonn tensor file (bad magic)")
    version = u32()
    if version != VERSION:
        raise TensorFileError(f"tensor file {path} has version {version}, expected {VERSION}")
    tensors = {}
    for _ in range(u32()):
        name_length = u32()
        if name_length >= 4096:
            raise TensorFileError(f"tensor file {path} is corrupt (name length {name_length})")
        name = take(name_length).decode("utf-8")
        code = u32()
        if code not in _CODE_TO_DTYPE:
            raise TensorFileError(f"tensor {name} in {path} has unknown dtype {code}")
        ndim = u32()
        if ndim > 8:
            raise TensorFileError(f"tensor {name} in {path} has {ndim} dimensions (corrupt file?)")
        shape = struct.unpack(f"<{ndim}q", take(8 * ndim))
        if any(d < 0 or d >= 1 << 40 for d in shape):
            raise TensorFileError(f"tensor {name} in {path} has a corrupt shape {shape}")
        dtype = _CODE_TO_DTYPE[code]
        numel = 1
        for d in shape:
            numel *= d
        raw = take(numel * torch.empty((), dtype=dtype).element_size())
        # bytearray: frombuffer wants a writable buffer; clone detaches from it. Assumes a little-endian host.
        flat = torch.frombuffer(bytearray(raw), dtype=dtype) if numel else torch.empty(0, dtype=dtype)
        if name in tensors:
            raise TensorFileError(f"tensor file {path} holds {name} twice")
        tensors[name] = flat.reshape(shape).clone()
    if pos != len(data):
        raise TensorFileError(f"tensor file {path} has trailing bytes (corrupt?)")
    return tensors


def write_tensor_file(path, tensors):
    """Writes {name: torch.Tensor} (f32, f64, bf16 or i32; anything else is an error) in dict order."""
    parts = [MAGIC, struct.pack("<II", VERSION, len(tensors))]
    for name, tensor in tensors.items():
        tensor = torch.as_tensor(tensor).detach().cpu().contiguous()
        if tensor.dtype not in _DTYPE_TO_CODE:
            raise TensorFileError(f"tensor {name} has dtype {tensor.dtype}, which the format cannot hold")
        encoded = name.encode("utf-8")
        parts.append(struct.pack("<I", len(encoded)) + encoded)
        parts.append(struct.pack(f"<II{tensor.dim()}q", _DTYPE_TO_CODE[tensor.dtype], tensor.dim(), *tensor.shape))
        # Go through uint8 so that bf16 (which numpy cannot hold) serialises the same way as the rest.
        parts.append(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    with open(path, "wb") as f:
        f.write(b"".join(parts))
