// The configuration form's lines about the model, from the server's model summary
// (scheduler_core/timing/model_summary.py): total and active parameters, the weights one GPU holds
// and their format, the experts, and the KV bytes per token of each layer group. Numbers only come
// from the server; this module words them.

import { html } from "./dom.js";

const GROUP_WORDS = {
  full_attention: () => "full attention",
  sliding_window: (g) => `sliding window ${g.window.toLocaleString("en-US")}`,
  chunked_local: (g) => `chunked local attention ${g.window.toLocaleString("en-US")}`,
  mla: () => "MLA latent",
  mamba: () => "linear attention (state)",
};

const billions = (n) => `${(n / 1e9).toFixed(n < 1e10 ? 2 : 1)}B`;
const gib = (bytes) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;
const count = (n) => n.toLocaleString("en-US");

function groupLine(group) {
  const kind = (GROUP_WORDS[group.kind] || (() => group.kind))(group);
  const layers = `${count(group.num_layers)} layer${group.num_layers === 1 ? "" : "s"}`;
  const size = group.kind === "mamba" ? `${count(group.state_bytes_per_request)} B state per request per layer`
    : `${count(group.bytes_per_token)} B/token per layer`;
  return html`<li>${kind}, ${layers}: ${size}</li>`;
}

export function modelLines(model) {
  const formats = Object.entries(model.weight_formats).map(([part, format]) => `${part} ${format}`).join(", ");
  const experts = model.experts;
  const params = experts
    ? `${billions(model.total_params)} parameters, ${billions(model.active_params)} active per token`
    : `${billions(model.total_params)} parameters (dense)`;
  const expertLine = experts && html`<li>experts: ${count(experts.num_experts)} in each of ${count(experts.num_moe_layers)} MoE layers, ${count(experts.per_token)} per token${experts.shared ? ", plus a shared expert" : ", no shared expert"}</li>`;
  return html`<ul class="model-lines">
    <li><b>${model.name}</b>: ${params}</li>
    <li>weights per GPU: ${gib(model.weights_bytes_per_gpu)} (${formats})</li>
    ${expertLine}
    <li>KV cache per token (${model.kv_dtype}), per GPU:<ul>${model.kv_groups.map(groupLine)}</ul></li></ul>`;
}
