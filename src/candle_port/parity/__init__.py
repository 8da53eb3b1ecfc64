"""Parity between a user's candle port and its PyTorch original (PaDiff for candle).

`candle-port reference` writes the torch side of a parity directory (reference.py), the crate
candle-port-parity writes the candle side from the port's own test, and `candle-port compare`
judges one against the other (compare.py, rendered by render.py). Both sides name tensors by
torch's state_dict and module names; renames.py maps a port's own names onto them.

The directory:
  manifest.json        what torch ran: dtype, inputs, outputs, parameters, modules in call order,
                       each tensor's own rounding noise, rename rules, optimizer steps and losses
  weights.safetensors  the state_dict before the first forward (what the port's VarBuilder reads)
  inputs.safetensors   input.K and upstream.K (the fixed weights of the loss sum(output * upstream))
  torch.safetensors    output.K, module:NAME (each submodule's output), grad:NAME (parameters)
  candle.json          the port's side: requests to its VarBuilder, errors, Vars without gradient
  candle.safetensors   output.K, module:NAME (what the port recorded), grad:NAME
"""

FORMAT = "candle-port-parity/1"
