// The inspector's text output: a header of facts, the parked advice when there is any, and the timeline. Plain
// lines only (no colours, no cursor moves), so it reads the same in a terminal, a pipe or a ticket.
import { REFERENCE_PLACEHOLDER, type OrderReport } from './order-report.ts';

function relative(ms: number): string {
  const s = Math.round(Math.abs(ms) / 100) / 10;
  return ms >= 0 ? `in ${s} s` : `${s} s overdue`;
}

/** A string as one double-quoted shell word, `$REF` kept for the shell to expand (with a check that it is set). */
function doubleQuoted(text: string): string {
  const escaped = text.replace(/[\\"$`]/g, (c) => `\\${c}`);
  return `"${escaped.replaceAll(REFERENCE_PLACEHOLDER, '${REF:?set REF to the unique_reference}')}"`;
}

/**
 * The shell line that writes a command to the commands topic (key = order_id), for operators with kcat, run as
 * printed: kcat's default partitioner may pick any partition (the worker forwards the command to its order's). A
 * field left to the operator (REFERENCE_PLACEHOLDER) is read from $REF.
 */
export function kcatLine(command: Record<string, string>, brokers: string[], topic: string): string {
  const line = `${command['order_id']}|${JSON.stringify(command)}`;
  return `echo ${doubleQuoted(line)} | kcat -P -b ${brokers.join(',')} -t ${topic} -K'|'`;
}

/**
 * The inspector's own settle line for an order, run as printed: an adopt reads the exchange order from $REF (with a
 * check that it is set). Order ids and references are shell-safe words (the contract's identifier alphabet).
 */
export function settleLine(orderId: string, adopt: boolean, seq: string): string {
  const resolution = adopt ? `adopt ${doubleQuoted(REFERENCE_PLACEHOLDER)}` : 'abandon';
  return `npm run -s inspect -- settle ${orderId} ${resolution}${seq}`;
}

export function renderReport(report: OrderReport): string {
  const lines: string[] = [];
  const row = (label: string, value: string): void => void lines.push(`${label.padEnd(11)}${value}`);
  row('order', `${report.orderId}${report.mode ? `  (${report.mode})` : ''}`);
  row('reference', report.uniqueReference ?? '- (no exchange order known)');
  if (report.state) {
    const s = report.state;
    row(
      'state',
      `${s.name}${s.terminal ? ' (finished)' : ''}  seq ${s.seq}, partition ${s.partition}, fence ${s.fence}, saved ${s.updatedAt}`,
    );
  } else row('state', '- (no record in the state topic)');
  row('exchange', report.exchangeStatus ?? '-');
  row('outcome', report.outcome ?? '- (open)');
  row('waits for', report.waitingFor);
  if (report.next.length === 0) row('next', '-');
  for (const [i, next] of report.next.entries())
    row(i === 0 ? 'next' : '', `${next.what} at ${next.at} (${relative(next.inMs)})`);
  row(
    'lease',
    report.lease === 'unknown'
      ? 'unknown (Redis did not answer)'
      : report.lease === null
        ? 'nobody holds it'
        : `${report.lease.holder} (fence ${report.lease.fence}, ${(report.lease.remainingMs / 1000).toFixed(1)} s left)`,
  );
  for (const problem of report.problems) row('PROBLEM', problem);

  if (report.parked) {
    const p = report.parked;
    lines.push('', `PARKED since ${p.since}: ${p.reason}`, `  ${p.message}`);
    lines.push(
      `  window     ${p.windowFrom ?? '?'} .. ${p.windowTo ?? '?'} (when the exchange order may have been created)`,
    );
    lines.push(`  attempts   ${p.attempts ?? '?'} POST /orders/; rate_id ${p.rateId ?? '-'}`);
    if (p.tried.length) lines.push(`  checked    ${p.tried.join('; ')}`);
    if (p.knownReference)
      lines.push(
        `  answered   ${p.knownReference.uniqueReference}${p.knownReference.heldElsewhere ? ' (made by this order, held by another: do not adopt it here)' : ' (its POST was answered with it; check it first)'}`,
      );
    if (p.recheck) lines.push(`  re-checks  ${p.recheck}`);
    lines.push('  what an operator can do (a signed order.settle on the commands topic, key = order_id):');
    lines.push(
      '  (settle signs with OPERATOR_KEY_FILE / OPERATOR_KEY_ID, as the worker requires, and checks the seq; with --dry-run it prints the signed kcat line instead of sending)',
    );
    const seq = report.state ? ` --seq ${report.state.seq}` : '';
    for (const action of p.actions) {
      lines.push(`  - ${action.resolution}: ${action.when}`);
      lines.push(`    ${settleLine(report.orderId, action.resolution === 'adopt', seq)}`);
    }
    lines.push(`  find the exchange order: npm run -s inspect -- find-exchange-order ${report.orderId}`);
  }

  lines.push('', 'timeline');
  if (report.timeline.length === 0) lines.push('  (no events)');
  else {
    lines.push(
      `  ${'seq'.padStart(4)}  ${'time'.padEnd(24)}  ${'event'.padEnd(24)}  ${'trace id'.padEnd(32)}  detail`,
    );
    for (const entry of report.timeline) lines.push(renderTimelineEntry(entry));
  }
  return lines.join('\n');
}

export function renderTimelineEntry(entry: OrderReport['timeline'][number]): string {
  return `  ${String(entry.seq).padStart(4)}  ${entry.occurredAt.padEnd(24)}  ${entry.type.padEnd(24)}  ${(entry.traceId ?? '-').padEnd(32)}  ${entry.summary}`;
}
