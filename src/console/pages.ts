// The console's pages: plain server-rendered HTML with a little CSS, no script and no build step. Pure functions of
// what the console read (the read view's summaries, an order's events, its lease holder, the exchange's candidates);
// every value is escaped. Forms post with a per-session token; settling takes a confirmation page.
import type { OrderSummary } from '../fleet/order-summary.ts';
import type { CandidateReport } from '../inspect/exchange-candidates.ts';
import type { OrderReport } from '../inspect/order-report.ts';

export function escapeHtml(value: string | number | null | undefined): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const style = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}
header{background:#1f2937;color:#fff;padding:10px 20px;display:flex;gap:24px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}
header form{margin-left:auto}
main{padding:16px 20px}
h1{font-size:20px;margin:8px 0 12px}h2{font-size:16px;margin:20px 0 8px}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{border-bottom:1px solid #e3e6ea;padding:6px 8px;text-align:left;vertical-align:top}
th{background:#eef0f3;font-weight:600}
code,.mono{font-family:ui-monospace,monospace;font-size:12px}
.badge{display:inline-block;padding:1px 6px;border-radius:8px;background:#fde68a;font-size:12px}
.badge.finished{background:#d1fae5}.badge.open{background:#dbeafe}
.box{background:#fff;border:1px solid #e3e6ea;padding:12px;margin:8px 0}
.warn{background:#fff7ed;border-color:#fdba74}.ok{background:#ecfdf5;border-color:#6ee7b7}
.for{color:#047857}.against{color:#b91c1c;font-weight:600}
button{padding:4px 12px;cursor:pointer}input[type=text],input[type=password]{padding:4px;width:260px}
dl{display:grid;grid-template-columns:160px 1fr;gap:4px 12px;margin:0}dt{color:#57606a}
`;

export function page(
  title: string,
  body: string,
  opts: { csrf?: string; refreshSeconds?: number } = {},
): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · order console</title>
${opts.refreshSeconds ? `<meta http-equiv="refresh" content="${opts.refreshSeconds}">` : ''}
<style>${style}</style></head>
<body><header><a href="/">Parked queue</a><a href="/stalled">Stalled</a>
<form method="get" action="/search"><input type="text" name="q" placeholder="order id, reference or address" aria-label="search"> <button type="submit">Search</button></form>
</header><main>${body}</main></body></html>`;
}

export function loginPage(problem?: string): string {
  return page(
    'Sign in',
    `<h1>Sign in</h1>${problem ? `<div class="box warn">${escapeHtml(problem)}</div>` : ''}
<form method="post" action="/login" class="box"><label>Token (OPS_API_TOKEN) <input type="password" name="token" autofocus></label> <button type="submit">Sign in</button></form>`,
  );
}

function age(since: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(since)) / 1000));
  return s < 120 ? `${s} s` : s < 7_200 ? `${Math.round(s / 60)} min` : `${(s / 3_600).toFixed(1)} h`;
}

function phaseBadge(order: OrderSummary): string {
  return `<span class="badge ${order.phase}">${escapeHtml(order.state)}</span>`;
}

function link(order: OrderSummary): string {
  return `<a href="/orders/${encodeURIComponent(order.order_id)}">${escapeHtml(order.order_id)}</a>`;
}

export function orderTable(orders: readonly OrderSummary[], now: number, empty: string): string {
  if (orders.length === 0) return `<div class="box">${escapeHtml(empty)}</div>`;
  const rows = orders
    .map((o) => {
      const i = o.intent;
      const p = o.parked;
      return `<tr><td>${link(o)}</td><td>${escapeHtml(o.mode)}</td><td>${phaseBadge(o)}</td><td>${escapeHtml(o.seq)}</td>
<td title="${escapeHtml(o.since)}">${escapeHtml(age(o.since, now))}</td>
<td class="mono">${escapeHtml(i.deposit_amount ?? `→ ${i.withdraw_amount ?? '?'}`)} ${escapeHtml(i.deposit_currency)} → ${escapeHtml(i.withdraw_currency)}<br>${escapeHtml(i.withdraw_address)}</td>
<td>${
        p
          ? `${escapeHtml(p.reason)}<br><span class="mono">window ${escapeHtml(p.window_from ?? '?')} .. ${escapeHtml(p.window_to ?? '?')}</span><br>${escapeHtml(p.attempts ?? '?')} POST(s)${p.last_failure ? `; last: ${escapeHtml(p.last_failure.code)}` : ''}`
          : escapeHtml(o.exchange_status ?? '-')
      }</td><td>${escapeHtml(o.unique_reference ?? '-')}</td></tr>`;
    })
    .join('\n');
  return `<table><thead><tr><th>order</th><th>mode</th><th>state</th><th>seq</th><th>age</th><th>asked</th><th>evidence</th><th>reference</th></tr></thead><tbody>
${rows}</tbody></table>`;
}

export interface OrderPageInput {
  order: OrderSummary;
  timeline: OrderReport['timeline'];
  parkedEvent: { tried: string[]; message: string } | null;
  replica: { worker_id: string; fence: number; lease_remaining_ms: number } | null | 'unknown';
  traceUiUrl: string | undefined;
  candidates: CandidateReport | { unavailable: string } | null;
  csrf: string;
  canSign: boolean;
  notice?: { ok: boolean; text: string };
  now: number;
}

function traceLink(traceId: string | null, traceUiUrl: string | undefined): string {
  if (!traceId) return '-';
  if (!traceUiUrl) return `<code>${escapeHtml(traceId)}</code>`;
  return `<a class="mono" href="${escapeHtml(traceUiUrl.replace('{trace_id}', traceId))}">${escapeHtml(traceId)}</a>`;
}

function settleForm(
  order: OrderSummary,
  csrf: string,
  resolution: string,
  reference: string | null,
  label: string,
): string {
  return `<form method="post" action="/orders/${encodeURIComponent(order.order_id)}/settle" style="display:inline">
<input type="hidden" name="csrf" value="${escapeHtml(csrf)}"><input type="hidden" name="seq" value="${escapeHtml(order.seq)}">
<input type="hidden" name="resolution" value="${escapeHtml(resolution)}">
${reference === null && resolution === 'adopt' ? '<input type="text" name="unique_reference" placeholder="unique_reference" aria-label="unique_reference"> ' : ''}
${reference !== null ? `<input type="hidden" name="unique_reference" value="${escapeHtml(reference)}">` : ''}
<button type="submit">${escapeHtml(label)}</button></form>`;
}

export function orderPage(input: OrderPageInput): string {
  const { order } = input;
  const replica =
    input.replica === 'unknown'
      ? 'unknown (Redis did not answer)'
      : input.replica === null
        ? 'nobody holds its lease'
        : `${input.replica.worker_id} (fence ${input.replica.fence}, ${(input.replica.lease_remaining_ms / 1000).toFixed(1)} s left)`;
  const d = order.deadlines;
  const facts = `<dl>
<dt>state</dt><dd>${phaseBadge(order)} seq ${escapeHtml(order.seq)}, since ${escapeHtml(order.since)} (${escapeHtml(age(order.since, input.now))})</dd>
<dt>mode</dt><dd>${escapeHtml(order.mode)}</dd>
<dt>exchange order</dt><dd>${escapeHtml(order.unique_reference ?? '- (none known)')} ${escapeHtml(order.exchange_status ?? '')}</dd>
<dt>asked</dt><dd class="mono">${escapeHtml(order.intent.deposit_amount ?? '?')} ${escapeHtml(order.intent.deposit_currency)} → ${escapeHtml(order.intent.withdraw_currency)} to ${escapeHtml(order.intent.withdraw_address)}</dd>
<dt>replica</dt><dd>${escapeHtml(replica)} (partition ${escapeHtml(order.partition)})</dd>
<dt>deadlines</dt><dd>payment ${escapeHtml(d.payment_deadline ?? '-')}; next poll ${escapeHtml(d.next_poll_at ?? '-')}; retry ${escapeHtml(d.retry_at ?? '-')}</dd>
<dt>trace of its creation</dt><dd>${traceLink(/^[\da-f]{2}-([\da-f]{32})-/.exec(order.trace_origin ?? '')?.[1] ?? null, input.traceUiUrl)}</dd>
</dl>`;
  let parked = '';
  if (order.parked) {
    const p = order.parked;
    const tried = input.parkedEvent?.tried.map((t) => `<li>${escapeHtml(t)}</li>`).join('') ?? '';
    parked = `<h2>Parked: ${escapeHtml(p.reason)}</h2><div class="box warn"><dl>
<dt>since</dt><dd>${escapeHtml(p.since)}</dd><dt>window</dt><dd class="mono">${escapeHtml(p.window_from ?? '?')} .. ${escapeHtml(p.window_to ?? '?')}</dd>
<dt>POST /orders/</dt><dd>${escapeHtml(p.attempts ?? '?')} attempt(s); GET /orders/ scans ${escapeHtml(p.lookup_scans ?? 0)}</dd>
<dt>last answer</dt><dd>${escapeHtml(p.last_failure ? `${p.last_failure.code}: ${p.last_failure.message}` : '-')}</dd>
${tried ? `<dt>tried</dt><dd><ul>${tried}</ul></dd>` : ''}</dl></div>`;
    let candidates = '';
    const c = input.candidates;
    if (c && 'unavailable' in c) candidates = `<div class="box">${escapeHtml(c.unavailable)}</div>`;
    else if (c) {
      const rows = c.candidates
        .map(
          (
            x,
          ) => `<tr><td class="mono">${x.matches ? '★ ' : ''}${escapeHtml(x.uniqueReference)}</td><td>${escapeHtml(x.createdOn)}</td><td>${escapeHtml(x.status)}</td>
<td>${x.evidence.map((e) => `<div class="${e.ok ? 'for' : 'against'}">${e.ok ? 'for' : 'against'}: ${escapeHtml(e.check)}: ${escapeHtml(e.detail)}</div>`).join('')}</td>
<td>${order.state.endsWith('(halted)') ? '' : settleForm(order, input.csrf, 'adopt', x.uniqueReference, `Adopt ${x.uniqueReference}`)}</td></tr>`,
        )
        .join('');
      candidates = `<p>${escapeHtml(c.note)}</p>${rows ? `<table><thead><tr><th>exchange order</th><th>created</th><th>status</th><th>evidence</th><th></th></tr></thead><tbody>${rows}</tbody></table>` : ''}`;
    }
    parked += `<h2>Exchange orders it could be (GET /orders/)</h2>${candidates}
<h2>Settle</h2><div class="box">${
      input.canSign
        ? `${order.state.endsWith('(halted)') ? '' : `${settleForm(order, input.csrf, 'adopt', null, 'Adopt…')} `}${settleForm(order, input.csrf, 'abandon', null, 'Abandon…')}<p>Each asks for a confirmation first; the command is signed with the console's operator key.</p>`
        : 'This console has no operator key (OPERATOR_KEY_FILE, OPERATOR_KEY_ID): it cannot settle.'
    }</div>`;
  }
  const rows = input.timeline
    .map(
      (e) =>
        `<tr><td>${escapeHtml(e.seq)}</td><td class="mono">${escapeHtml(e.occurredAt)}</td><td><strong>${escapeHtml(e.type)}</strong></td><td>${escapeHtml(e.summary)}</td><td>${traceLink(e.traceId, input.traceUiUrl)}</td></tr>`,
    )
    .join('\n');
  const notice = input.notice
    ? `<div class="box ${input.notice.ok ? 'ok' : 'warn'}">${escapeHtml(input.notice.text)}</div>`
    : '';
  return page(
    order.order_id,
    `<h1>Order ${escapeHtml(order.order_id)}</h1>${notice}<div class="box">${facts}</div>${parked}
<h2>Timeline</h2><table id="timeline"><thead><tr><th>seq</th><th>time</th><th>event</th><th>detail</th><th>trace</th></tr></thead><tbody>
${rows || '<tr><td colspan="5">(no events read yet)</td></tr>'}</tbody></table>
<p>Exchange calls are not written to the events: each command's and poll's trace holds them (the trace links above).</p>`,
  );
}

export function confirmPage(input: {
  order: OrderSummary;
  command: Record<string, string>;
  csrf: string;
}): string {
  const { order, command } = input;
  const fields = Object.entries({
    csrf: input.csrf,
    seq: String(order.seq),
    resolution: command['resolution'] ?? '',
    unique_reference: command['unique_reference'] ?? '',
    confirm: 'yes',
  })
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('');
  const what =
    command['resolution'] === 'adopt'
      ? `adopt exchange order ${command['unique_reference'] ?? '?'}: the worker GETs it, checks pair, address and amount and that no other order owns it, then order.created follows`
      : 'abandon the order: it ends with order.failed (abandoned_by_operator); only right when the exchange holds no order of it';
  return page(
    `Confirm ${order.order_id}`,
    `<h1>Confirm: settle ${escapeHtml(order.order_id)}</h1>
<div class="box warn"><p>You are about to <strong>${escapeHtml(what)}</strong>.</p>
<p>It is sent only if the order is still at seq ${escapeHtml(order.seq)} (parked) when you confirm.</p>
<pre class="mono">${escapeHtml(JSON.stringify(command, null, 2))}</pre>
<form method="post" action="/orders/${encodeURIComponent(order.order_id)}/settle">${fields}<button type="submit" id="confirm">Confirm and send</button></form>
<p><a href="/orders/${encodeURIComponent(order.order_id)}">Cancel</a></p></div>`,
  );
}
