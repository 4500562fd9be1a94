"""quant.py - golden data of the int8 quantization ops (tests/test_quant.c):
torch.quantize_per_tensor / quantize_per_channel (int_repr) and dequantize
on random f32 inputs with a few values placed on rounding ties and beyond the
quantized range. Run with /usr/bin/python3 (Debian's python3-torch)."""
import torch

from common import Family

f = Family("quant", seed=7)
x = torch.randn(3, 5, 4) * 3
x[0, 0, :4] = torch.tensor([0.125, -0.125, 100.0, -100.0])   # ties at scale 0.05/0.25, clamps
f.save("x", x)
# per tensor: (scale, zero point, dtype)
for k, (s, zp, dt) in enumerate([(0.05, 128, torch.quint8), (0.25, -3, torch.qint8)]):
    q = torch.quantize_per_tensor(x, s, zp, dt)
    f.save(f"pt{k}.q", q.int_repr())
    f.save(f"pt{k}.dq", q.dequantize())
# per channel along axis 1 (5 channels) and along axis -1 (4)
for k, (axis, dt) in enumerate([(1, torch.quint8), (2, torch.qint8)]):
    c = x.shape[axis]
    scales = torch.rand(c, dtype=torch.float64) * 0.2 + 0.01
    zps = torch.randint(0, 200, (c,)) if dt == torch.quint8 else torch.randint(-100, 100, (c,))
    q = torch.quantize_per_channel(x, scales, zps, axis, dt)
    f.save(f"pc{k}.scales", scales.float())
    f.save(f"pc{k}.zps", zps)
    f.save(f"pc{k}.q", q.int_repr())
    f.save(f"pc{k}.dq", q.dequantize())
f.done()
