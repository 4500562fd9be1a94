"""onnx_models.py - small models exported with torch.onnx.export (opset 17) for
tjit's ONNX import (frontend/onnx_*.c, tests/test_onnx.c): each as
tests/golden/onnx/<name>.onnx with its inputs <name>.in<k>.npy and PyTorch's
outputs <name>.out<k>.npy. Models: an MLP, a convnet with batch norm (eval),
a transformer encoder layer (eval), and an MLP exported with a dynamic batch
dim (checked at two batch sizes)."""
import os

import torch
import torch.nn as nn

from common import Family


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        # b1 after the pool stays a BatchNormalization node (the exporter
        # folds a batch norm that directly follows a conv, as b2)
        x = nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.relu(self.b2(self.c2(self.b1(x))))
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


class MLP(nn.Module):
    def __init__(self, gelu=False):
        super().__init__()
        self.l1 = nn.Linear(16, 32)
        self.l2 = nn.Linear(32, 8)
        self.act = nn.GELU() if gelu else nn.ReLU()

    def forward(self, x):
        return self.l2(self.act(self.l1(x)))


def randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.5, 0.5)


def export(fam, name, model, inputs, dynamic=None, extra_inputs=()):
    model.eval()
    path = os.path.join(fam.dir, name + ".onnx")
    names = ["x%d" % k for k in range(len(inputs))]
    torch.onnx.export(model, tuple(inputs), path, opset_version=17, input_names=names,
                      output_names=["y"], dynamic_axes=dynamic, do_constant_folding=True)
    for tag, ins in [("", inputs)] + [(".b%d" % i, e) for i, e in enumerate(extra_inputs)]:
        with torch.no_grad():
            out = model(*ins)
        for k, t in enumerate(ins):
            fam.save("%s%s.in%d" % (name, tag, k), t)
        fam.save("%s%s.out0" % (name, tag), out)


def main():
    fam = Family("onnx", seed=0)
    for f in os.listdir(fam.dir):
        if f.endswith(".onnx"):
            os.remove(os.path.join(fam.dir, f))
    export(fam, "mlp", MLP(gelu=True), [torch.randn(4, 16)])
    cn = ConvNet()
    randomize_bn(cn)
    export(fam, "convnet", cn, [torch.randn(2, 3, 16, 16)])
    enc = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                     batch_first=True)
    export(fam, "encoder", enc, [torch.randn(2, 6, 32)])
    # an operator tjit does not map, for the error test
    import onnx
    from onnx import helper, TensorProto
    node = helper.make_node("Hardmax", ["x0"], ["y"], name="hm")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(fam.dir, "unsupported.onnx"))
    export(fam, "mlp_dyn", MLP(), [torch.randn(3, 16)], dynamic={"x0": {0: "batch"}, "y": {0: "batch"}},
           extra_inputs=[[torch.randn(7, 16)]])
    fam.done()


if __name__ == "__main__":
    main()
