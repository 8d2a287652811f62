// kbroker's web console: hash routes, JSON polled from /v1/console and /v1/explain, every value put
// in the page as text (textContent), never as markup: record keys, values and headers are hostile input.
"use strict";

const POLL_MS = 2000;
const view = () => document.getElementById("view");
let pollTimer = null;
let generation = 0; // a render that finishes after the route changed is dropped

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "onclick" || name === "onsubmit") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function link(href, text, id) {
  return el("a", id ? { href, id } : { href }, text);
}

function num(value) {
  return el("td", { class: "num" }, value === null || value === undefined ? "–" : String(value));
}

function cell(value) {
  if (value instanceof Node) return el("td", {}, value);
  return el("td", {}, value === null || value === undefined ? "–" : typeof value === "object" ? JSON.stringify(value) : String(value));
}

function table(id, headings, rows) {
  return el("table", id ? { id } : {},
    el("thead", {}, el("tr", {}, headings.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function enc(part) {
  return encodeURIComponent(part);
}

async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.message || `${response.status} ${response.statusText}`);
  return body;
}

function setStatus(text, isError) {
  const status = document.getElementById("status");
  status.textContent = text;
  status.className = isError ? "error" : "";
}

// -- pages -------------------------------------------------------------------------------------
async function topicsPage() {
  const body = await getJson("/v1/console/topics");
  const rows = body.topics.map((t) => el("tr", { "data-topic": t.name },
    el("td", {}, link(`#/topic/${enc(t.name)}`, t.name)),
    num(t.partitions), num(t.messages), num(bytes(t.size_bytes)), cell(t.internal ? "yes" : "")));
  return [el("h2", {}, "Topics"), table("topics", ["Topic", "Partitions", "Messages", "Size", "Internal"], rows)];
}

async function topicPage(name) {
  const t = await getJson(`/v1/console/topics/${enc(name)}`);
  const partitions = t.partition_details.map((p) => el("tr", { "data-partition": p.partition },
    el("td", {}, link(`#/messages/${enc(name)}/${p.partition}`, `${p.partition}`, `partition-${p.partition}`)),
    num(p.log_start_offset), num(p.high_watermark), num(p.last_stable_offset), num(p.log_end_offset),
    num(p.messages), num(bytes(p.size_bytes))));
  const configs = t.configs.map((c) => el("tr", { class: c.source === "topic" ? "override" : "" },
    cell(c.name), cell(c.value), cell(c.source)));
  return [
    el("h2", {}, "Topic ", el("span", { id: "topic-name" }, t.name)),
    el("p", { class: "muted" }, `id ${t.topic_id} · ${t.partitions} partitions · ${t.messages} messages · ${bytes(t.size_bytes)}`),
    el("h3", {}, "Partitions"),
    table("partitions", ["Partition", "Log start", "High watermark", "Last stable", "Log end", "Messages", "Size"], partitions),
    el("h3", {}, "Configs"),
    table("configs", ["Name", "Value", "Source"], configs),
  ];
}

function rendered(value, format) {
  if (value === null || value === undefined) return el("span", { class: "muted" }, "null");
  let text;
  if (format === "hex") text = value.hex;
  else if (format === "json") text = value.json !== null ? value.json : value.text !== null ? value.text : value.hex;
  else text = value.text !== null ? value.text : value.hex;
  const note = value.truncated ? ` … (${value.size} bytes)` : "";
  return el("pre", {}, text + note);
}

async function messagesPage(topic, partition, params) {
  const format = params.get("format") || "json";
  const query = new URLSearchParams();
  const when = params.get("timestamp");
  if (when) query.set("timestamp", /^-?\d+$/.test(when) ? when : String(Date.parse(when)));
  else if (params.get("offset")) query.set("offset", params.get("offset"));
  query.set("limit", params.get("limit") || "50");
  const page = await getJson(`/v1/console/topics/${enc(topic)}/partitions/${enc(partition)}/messages?${query}`);
  const offsetInput = el("input", { id: "offset", name: "offset", size: 10, placeholder: "offset" });
  const timestampInput = el("input", { id: "timestamp", name: "timestamp", size: 24, placeholder: "timestamp (ms or ISO 8601)" });
  const formatSelect = el("select", { id: "format", name: "format" },
    ["json", "text", "hex"].map((f) => el("option", f === format ? { value: f, selected: "selected" } : { value: f }, f)));
  const go = (how) => (event) => {
    event.preventDefault();
    const next = new URLSearchParams({ format: formatSelect.value });
    if (how === "offset" && offsetInput.value) next.set("offset", offsetInput.value.trim());
    if (how === "timestamp" && timestampInput.value) next.set("timestamp", timestampInput.value.trim());
    location.hash = `#/messages/${enc(topic)}/${enc(partition)}?${next}`;
  };
  const rows = page.messages.map((m) => el("tr", { "data-offset": m.offset },
    num(m.offset), cell(new Date(m.timestamp).toISOString()), el("td", { class: "key" }, rendered(m.key, format)),
    el("td", { class: "value" }, rendered(m.value, format)),
    el("td", { class: "headers" }, m.headers.map((h) => el("div", {}, el("b", {}, h.key), ": ", rendered(h.value, format))))));
  const nextLink = page.next_offset < page.high_watermark
    ? link(`#/messages/${enc(topic)}/${enc(partition)}?${new URLSearchParams({ format, offset: page.next_offset })}`, "next page", "next-page")
    : null;
  const found = page.timestamp !== null
    ? el("p", { id: "timestamp-result" }, page.offset_for_timestamp === null
      ? `no record at or after timestamp ${page.timestamp}`
      : `first record at or after timestamp ${page.timestamp}: offset ${page.offset_for_timestamp}`)
    : null;
  return [
    el("h2", {}, "Messages ", link(`#/topic/${enc(topic)}`, topic), ` / partition ${partition}`),
    el("p", { class: "muted" }, `offsets ${page.log_start_offset} to ${page.high_watermark} · from ${page.from_offset}`),
    el("form", { id: "by-offset", onsubmit: go("offset") }, "Offset", offsetInput, el("button", { id: "go-offset", type: "submit" }, "Go")),
    el("form", { id: "by-timestamp", onsubmit: go("timestamp") }, "Timestamp", timestampInput,
      el("button", { id: "go-timestamp", type: "submit" }, "Go"), "Show as", formatSelect),
    found,
    table("messages", ["Offset", "Timestamp", "Key", "Value", "Headers"], rows),
    nextLink,
  ];
}

async function groupsPage() {
  const body = await getJson("/v1/console/groups");
  const rows = body.groups.map((g) => el("tr", { "data-group": g.group },
    el("td", {}, link(`#/group/${enc(g.group)}`, g.group)), cell(g.type), cell(g.state), num(g.members), num(g.total_lag)));
  return [el("h2", {}, "Consumer groups"), table("groups", ["Group", "Type", "State", "Members", "Lag"], rows)];
}

async function groupPage(id) {
  const g = await getJson(`/v1/console/groups/${enc(id)}`);
  const members = g.member_details.map((m) => el("tr", { "data-member": m.member_id },
    cell(m.member_id), cell(m.group_instance_id), cell(m.client_id), cell(m.client_host),
    cell(m.assignment.map((a) => `${a.topic}: ${a.partitions.join(",")}`).join("; "))));
  const lag = g.lag.map((row) => el("tr", {},
    cell(row.topic), num(row.partition), num(row.committed), num(row.high_watermark), num(row.lag), cell(row.member_id)));
  return [
    el("h2", {}, "Group ", el("span", { id: "group-name" }, g.group)),
    el("p", { id: "group-state" }, `${g.type} · ${g.state} · generation ${g.generation} · protocol ${g.protocol || "–"} · total lag ${g.total_lag ?? "–"}`),
    el("h3", {}, "Members"),
    table("members", ["Member", "Instance", "Client", "Host", "Assignment"], members),
    el("h3", {}, "Offsets and lag"),
    table("lag", ["Topic", "Partition", "Committed", "High watermark", "Lag", "Member"], lag),
  ];
}

async function sharePage() {
  const body = await getJson("/v1/console/share-groups");
  const out = [el("h2", {}, "Share groups and queues")];
  if (!body.share_groups.length) out.push(el("p", { class: "muted", id: "no-share-groups" }, "No share groups."));
  for (const g of body.share_groups) {
    out.push(el("h3", { "data-share-group": g.group }, `${g.group} · ${g.state} · epoch ${g.group_epoch} · backlog ${g.backlog}`));
    if (g.queue_consumers.length) out.push(el("p", {}, `queue consumers: ${g.queue_consumers.join(", ")}`));
    out.push(table(null, ["Member", "Client", "Host", "Subscribed"],
      g.members.map((m) => el("tr", {}, cell(m.member_id), cell(m.client_id), cell(m.client_host), cell(m.subscribed.join(", "))))));
    out.push(table(null, ["Topic", "Partition", "Start", "End", "In flight", "High watermark", "Backlog"],
      g.partitions.map((p) => el("tr", {}, cell(p.topic), num(p.partition), num(p.start_offset), num(p.end_offset),
        num(p.in_flight), num(p.high_watermark), num(p.backlog)))));
  }
  return out;
}

async function vqListPage(params) {
  const prefix = params.get("prefix") || "";
  const query = new URLSearchParams({ limit: "100" });
  if (prefix) query.set("prefix", prefix);
  if (params.get("after")) query.set("after", params.get("after"));
  const body = await getJson(`/v1/vq?${query}`);
  const prefixInput = el("input", { id: "vq-prefix", name: "prefix", size: 24, placeholder: "queue name prefix", value: prefix });
  const filter = (event) => {
    event.preventDefault();
    const wanted = prefixInput.value.trim();
    location.hash = wanted ? `#/vq?${new URLSearchParams({ prefix: wanted })}` : "#/vq";
  };
  const rows = body.queues.map((q) => el("tr", { "data-queue": q.queue },
    el("td", {}, link(`#/vq/${enc(q.queue)}`, q.queue)), num(q.partition), num(q.depth), num(q.consumers.length),
    cell(q.consumers.map((c) => `${c.consumer}: lag ${c.lag}`).join(", "))));
  const last = body.queues.length ? body.queues[body.queues.length - 1].queue : null;
  const next = body.truncated && last !== null
    ? link(`#/vq?${new URLSearchParams(prefix ? { prefix, after: last } : { after: last })}`, "next page", "vq-next")
    : null;
  return [
    el("h2", {}, "Virtual queues"),
    el("form", { id: "vq-filter", onsubmit: filter }, "Prefix", prefixInput, el("button", { id: "vq-go", type: "submit" }, "Filter")),
    body.queues.length
      ? table("queues", ["Queue", "Partition", "Depth", "Consumers", "Lag"], rows)
      : el("p", { class: "muted", id: "no-queues" }, "No virtual queues."),
    next,
  ];
}

async function vqQueuePage(name, params) {
  const from = params.get("offset") || "0";
  const [q, page] = await Promise.all([
    getJson(`/v1/vq/${enc(name)}`),
    getJson(`/v1/console/vq/${enc(name)}/records?${new URLSearchParams({ offset: from, limit: "50" })}`),
  ]);
  const consumers = q.consumers.map((c) => el("tr", { "data-consumer": c.consumer },
    cell(c.consumer), num(c.position), num(c.lag)));
  const due = (r) => r.due_at !== null && r.due_at > page.now ? `due ${new Date(r.due_at).toISOString()}` : "";
  const records = page.records.map((r) => el("tr", { "data-offset": r.offset },
    num(r.offset), cell(new Date(r.timestamp).toISOString()), el("td", { class: "due" }, due(r)), cell(r.tag),
    el("td", { class: "value" }, rendered(r.value, "json")),
    el("td", { class: "headers" }, r.headers.map((h) => el("div", {}, el("b", {}, h.key), ": ", rendered(h.value, "text"))))));
  const next = page.more
    ? link(`#/vq/${enc(name)}?${new URLSearchParams({ offset: page.next_offset })}`, "next page", "vq-records-next")
    : null;
  return [
    el("h2", {}, "Queue ", el("span", { id: "queue-name" }, q.queue)),
    el("p", { class: "muted", id: "queue-summary" }, `partition ${q.partition} of the data topic · depth ${q.depth} · ${q.consumers.length} consumer(s)`),
    el("h3", {}, "Consumers"),
    consumers.length ? table("queue-consumers", ["Consumer", "Position", "Lag"], consumers)
      : el("p", { class: "muted" }, "No consumer has acknowledged yet."),
    el("h3", {}, `Records from offset ${page.from_offset}`),
    records.length ? table("queue-records", ["Offset", "Timestamp", "Delayed", "Tag", "Value", "Headers"], records)
      : el("p", { class: "muted", id: "no-records" }, "No records from this offset."),
    next,
  ];
}

async function explainPage() {
  const [groups, txns] = await Promise.all([getJson("/v1/explain/groups"), getJson("/v1/explain/transactions")]);
  const out = [el("h2", {}, "Explain"), el("h3", {}, "Groups")];
  for (const g of groups.groups) {
    const since = g.state_since_ms ? ` since ${new Date(g.state_since_ms).toISOString()}` : "";
    out.push(el("div", { class: "explain-group", "data-group": g.group },
      el("p", {}, el("b", {}, g.group), ` is ${g.state}${since}, generation ${g.generation}, leader ${g.leader || "–"}, ${g.members.length} member(s)`),
      table(null, ["Member", "Instance", "Client", "Host"], g.members.map((m) => el("tr", {},
        cell(m.member_id), cell(m.group_instance_id), cell(m.client_id), cell(m.client_host)))),
      g.transitions ? table(null, ["Transition"], g.transitions.map((t) => el("tr", {}, cell(t)))) : null));
  }
  if (!groups.groups.length) out.push(el("p", { class: "muted" }, "No groups."));
  out.push(el("h3", {}, "Open transactions"));
  out.push(table("open-transactions", ["Transactional id", "Producer", "Epoch", "State", "Started", "Timeout ms", "Partitions"],
    txns.open_transactions.map((t) => el("tr", {}, cell(t.transactional_id), num(t.producer_id), num(t.producer_epoch),
      cell(t.state), cell(new Date(t.started_ms).toISOString()), num(t.timeout_ms), cell(t.partitions.join(", "))))));
  out.push(el("h3", {}, "Partitions held back by open transactions"));
  out.push(table("held-back", ["Partition", "Last stable offset", "High watermark", "Held back", "Open by"],
    txns.partitions_held_back.map((p) => el("tr", {}, cell(`${p.topic}-${p.partition}`), num(p.last_stable_offset),
      num(p.high_watermark), num(p.records_held_back),
      cell(p.open.map((o) => `${o.transactional_id || o.producer_id} from ${o.first_offset}`).join("; "))))));
  return out;
}

// -- routing -------------------------------------------------------------------------------------
function route() {
  const hash = location.hash.replace(/^#\/?/, "") || "topics";
  const [path, queryString] = hash.split("?");
  const parts = path.split("/").map(decodeURIComponent);
  const params = new URLSearchParams(queryString || "");
  switch (parts[0]) {
    case "topic": return { nav: "topics", render: () => topicPage(parts[1]), poll: true };
    case "messages": return { nav: "topics", render: () => messagesPage(parts[1], parts[2], params), poll: false };
    case "groups": return { nav: "groups", render: groupsPage, poll: true };
    case "group": return { nav: "groups", render: () => groupPage(parts[1]), poll: true };
    case "share": return { nav: "share", render: sharePage, poll: true };
    case "vq": return parts[1] === undefined
      ? { nav: "vq", render: () => vqListPage(params), poll: true }
      : { nav: "vq", render: () => vqQueuePage(parts[1], params), poll: true };
    case "explain": return { nav: "explain", render: explainPage, poll: true };
    default: return { nav: "topics", render: topicsPage, poll: true };
  }
}

function typing() {
  const active = document.activeElement;
  return active !== null && active.tagName === "INPUT" && view().contains(active);
}

async function show(first) {
  const current = route();
  if (!first && typing()) { // a poll would replace the input being typed in: wait for the next one
    clearTimeout(pollTimer);
    pollTimer = setTimeout(() => show(false), POLL_MS);
    return;
  }
  const mine = first ? ++generation : generation;
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.id === `nav-${current.nav}`);
  try {
    const nodes = await current.render();
    if (mine !== generation) return;
    view().replaceChildren(...nodes.filter((n) => n));
    view().setAttribute("data-loaded", String(mine));
    setStatus(`updated ${new Date().toLocaleTimeString()}${current.poll ? " · live" : ""}`, false);
  } catch (error) {
    if (mine !== generation) return;
    if (first) view().replaceChildren(el("p", { class: "error", id: "error" }, String(error.message || error)));
    setStatus(`error: ${error.message || error}`, true);
  }
  clearTimeout(pollTimer);
  if (current.poll) pollTimer = setTimeout(() => show(false), POLL_MS);
}

window.addEventListener("hashchange", () => show(true));
window.addEventListener("DOMContentLoaded", () => show(true));
