"""ONNX's RNN, GRU and LSTM in PyTorch, and the gradient cases of
ImportRecurrent.cpp that check_gradients.py runs (its case(), node() and
rand() are passed in)."""
import numpy as np
import torch


def onnx_recurrent(cell, x, w, r, b=None, h0=None, c0=None, p=None, direction="forward",
                   layout=0, linear_before_reset=0, clip=None, lens=None, input_forget=0):
    """ONNX's RNN / GRU / LSTM equations in PyTorch (default activations);
    returns Y, Y_h, Y_c in the op's layout. With lens, row i runs its first
    lens[i] steps (the reverse direction from step lens[i] - 1 down), Y is
    zero past them and Y_h / Y_c are its states after them."""
    if layout == 1:
        x = x.transpose(0, 1)
        h0 = None if h0 is None else h0.transpose(0, 1)
        c0 = None if c0 is None else c0.transpose(0, 1)
    steps, batch = x.shape[0], x.shape[1]
    hidden = r.shape[2]
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[cell]
    ys, hs, cs = [], [], []
    sig = torch.sigmoid

    def cl(v):
        return v if clip is None else torch.clamp(v, -clip, clip)
    for d in range(w.shape[0]):
        wb = b[d, :gates * hidden] if b is not None else torch.zeros(gates * hidden, dtype=x.dtype)
        rb = b[d, gates * hidden:] if b is not None else torch.zeros(gates * hidden, dtype=x.dtype)
        h = h0[d] if h0 is not None else torch.zeros(batch, hidden, dtype=x.dtype)
        c = c0[d] if c0 is not None else torch.zeros(batch, hidden, dtype=x.dtype)
        reverse = direction == "reverse" or d == 1
        out = [None] * steps
        for t in (reversed(range(steps)) if reverse else range(steps)):
            h_prev, c_prev = h, c
            xw = x[t] @ w[d].T + wb
            if cell == "RNN":
                h = torch.tanh(cl(xw + h @ r[d].T + rb))
            elif cell == "LSTM":
                g = xw + h @ r[d].T + rb
                gi, go, gf, gc = g.split(hidden, 1)
                pi, po, pf = (p[d].split(hidden) if p is not None else (0, 0, 0))
                i = sig(cl(gi + pi * c))
                f = 1 - i if input_forget else sig(cl(gf + pf * c))
                c = f * c + i * torch.tanh(cl(gc))
                o = sig(cl(go + po * c))
                h = o * torch.tanh(c)
            else:
                xz, xr, xh = xw.split(hidden, 1)
                rz, rr, rh = r[d].split(hidden, 0)
                bz, br, bh = rb.split(hidden)
                z = sig(cl(xz + h @ rz.T + bz))
                rt = sig(cl(xr + h @ rr.T + br))
                if linear_before_reset:
                    hh = torch.tanh(cl(xh + rt * (h @ rh.T + bh)))
                else:
                    hh = torch.tanh(cl(xh + (rt * h) @ rh.T + bh))
                h = (1 - z) * hh + z * h
            if lens is not None:
                inside = (t < torch.as_tensor(lens)).reshape(-1, 1)
                out[t] = torch.where(inside, h, torch.zeros_like(h))
                h = torch.where(inside, h, h_prev)
                c = torch.where(inside, c, c_prev)
                continue
            out[t] = h
        ys.append(torch.stack(out))
        hs.append(h)
        cs.append(c)
    y = torch.stack(ys, 1)
    y_h, y_c = torch.stack(hs), torch.stack(cs)
    if layout == 1:
        return y.permute(2, 0, 1, 3), y_h.transpose(0, 1), y_c.transpose(0, 1)
    return y, y_h, y_c


def define(case, node, rand):
    """RNN, GRU and LSTM, unrolled at import (ImportRecurrent.cpp): the
    cases, added through check_gradients' case()."""
    g = "import"
    T, B, I, H = 3, 2, 3, 4

    def params(gates, d=1, bias=True, initial=False, cell_state=False, peephole=False, layout=0):
        ps = {"x": rand(B, T, I) if layout else rand(T, B, I), "w": rand(d, gates * H, I),
              "r": rand(d, gates * H, H)}
        if bias:
            ps["b"] = rand(d, 2 * gates * H)
        if initial:
            ps["h0"] = rand(B, d, H) if layout else rand(d, B, H)
        if cell_state:
            ps["c0"] = rand(B, d, H) if layout else rand(d, B, H)
        if peephole:
            ps["p"] = rand(d, 3 * H)
        return ps

    def rec(name, cell, ps, output, lens=None, **attrs):
        names = ["x", "w", "r", "b", "lens", "h0", "c0", "p"]
        inputs = [n if n in ps or (n == "lens" and lens is not None) else "" for n in names]
        while inputs[-1] == "":
            inputs.pop()
        outputs = ["", "", ""]
        outputs[output] = "y"
        while outputs[-1] == "":
            outputs.pop()

        def forward(e):
            return onnx_recurrent(cell, e["x"], e["w"], e["r"], e.get("b"), e.get("h0"), e.get("c0"),
                                  e.get("p"), attrs.get("direction", "forward"), attrs.get("layout", 0),
                                  attrs.get("linear_before_reset", 0), attrs.get("clip"),
                                  lens, attrs.get("input_forget", 0))[output]
        consts = {"lens": np.array(lens, np.int32)} if lens is not None else None
        case(name, ps, [node(cell, inputs, outputs, hidden_size=H, **attrs)], forward, consts=consts,
             group=g)

    rec("lstm_peephole_initial_states", "LSTM",
        params(4, initial=True, cell_state=True, peephole=True), 0)
    rec("lstm_cell_state_output", "LSTM", params(4), 2)
    rec("lstm_bidirectional_layout1", "LSTM", params(4, d=2, initial=True, cell_state=True, layout=1),
        0, direction="bidirectional", layout=1)
    rec("gru_linear_before_reset", "GRU", params(3, initial=True), 0, linear_before_reset=1)
    rec("gru_reset_before_linear", "GRU", params(3, initial=True), 0)
    rec("gru_no_bias_last_state", "GRU", params(3, bias=False), 1)
    rec("rnn_reverse_last_state", "RNN", params(1, initial=True), 1, direction="reverse")
    rec("lstm_clip", "LSTM", params(4), 0, clip=0.6)
    # A cell state beyond the clip (an initial 0.8 against 0.25): the clip
    # bounds the gates' pre-activations, not c before h = o * tanh(c)
    # (onnxruntime's reading, checked against it).
    clipped = params(4, cell_state=True)
    clipped["c0"] = np.full_like(clipped["c0"], 0.8)
    rec("lstm_clip_cell_state_beyond", "LSTM", clipped, 0, clip=0.25)
    # input_forget couples the gates: f = 1 - i (onnxruntime's reading,
    # checked against it); with peepholes, the forget one goes unused.
    rec("lstm_input_forget_peephole", "LSTM", params(4, cell_state=True, peephole=True), 2,
        input_forget=1)
    # Rows of lengths 3 and 1 (of 3): past its length a row keeps its state
    # (so the reverse direction starts at its last step) and outputs zeros.
    rec("lstm_bidirectional_lengths", "LSTM", params(4, d=2, initial=True, cell_state=True), 0,
        lens=[3, 1], direction="bidirectional")
    rec("lstm_lengths_cell_state", "LSTM", params(4, initial=True, cell_state=True), 2, lens=[1, 3])
    rec("gru_reverse_lengths_last_state", "GRU", params(3), 1, lens=[2, 3], direction="reverse",
        linear_before_reset=1)
    rec("rnn_lengths_zero_row", "RNN", params(1, initial=True), 0, lens=[0, 2])
