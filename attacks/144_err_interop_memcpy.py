"""Promise: interop and copy refusals are safetile errors: from_dlpack of non-DLPack or
unsupported dtypes, memcpy with mismatched shape/dtype/device, borrow_mut of non-tensors,
Stream on unknown devices, sync_on of a non-stream."""
from _errq import *

run_cases([
    ("from_dlpack(list)", lambda: ct.from_dlpack([1, 2])), ("from_dlpack(object())", lambda: ct.from_dlpack(object())),
    ("from_dlpack(complex)", lambda: ct.from_dlpack(np.zeros(4, np.complex64))),
    ("from_dlpack(str array)", lambda: ct.from_dlpack(np.array(["a"]))),
    ("from_dlpack(0-size)", lambda: (ct.from_dlpack(np.zeros(0, np.float32)).partition(1), (_ for _ in ()).throw(ct.TensorError("0-size ok")))),
    ("Tensor(list)", lambda: ct.Tensor([1.0, 2.0])), ("Tensor('x')", lambda: ct.Tensor("x")),
    ("memcpy shape", lambda: ct.memcpy(ct.zeros(4).sync(), ct.zeros(5).sync()).sync()),
    ("memcpy dtype", lambda: ct.memcpy(ct.zeros(4).sync(), ct.zeros(4, dtype=ct.float64).sync()).sync()),
    ("memcpy numpy dst", lambda: ct.memcpy(np.zeros(4, np.float32), ct.zeros(4).sync()).sync()),
    ("memcpy src list", lambda: ct.memcpy(ct.zeros(4).sync(), [1, 2, 3, 4]).sync()),
    ("borrow_mut(ndarray)", lambda: ct.borrow_mut(np.zeros(4)).partition(4)),
    ("borrow_mut(Shared)", lambda: ct.borrow_mut(ct.zeros(4).sync().shared()).partition(4)),
    ("Stream('tpu')", lambda: ct.Stream("tpu")), ("sync_on('x')", lambda: ct.zeros(4).sync_on("x")),
    ("shared(ndarray)", lambda: ct.shared(np.zeros(4))), ("zip(1, 2).unzip(3)", lambda: ct.zip(1, 2).unzip(3)[2].sync()),
    ("first() of non-tuple", lambda: ct.value(3).first().sync()),
], "bad interop/copy calls")
