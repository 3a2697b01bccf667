// The inspector's fleet commands (`npm run inspect -- list | find-exchange-order | settle`): which orders are parked
// or stalled, which exchange order a parked one's is, and settling one or many with an operator's signature. They
// read the state topic into the same read view the workers keep (fleet-reader.ts); only `settle` writes (one
// signed order.settle per order, to the order's partition), and never for an order whose seq moved since listed.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { ConfigError, loadOperatorConfig, loadOperatorToolConfig } from '../config.ts';
import type { ExchangeOrderView } from '../../machines/domain.ts';
import { ExchangeClient } from '../exchange/client.ts';
import type { FleetView } from '../fleet/fleet-view.ts';
import { listQuerySchema, parseDuration } from '../fleet/list-query.ts';
import type { OrderSummary } from '../fleet/order-summary.ts';
import { createKafka } from '../kafka/kafka-client.ts';
import { createLogger } from '../telemetry/logger.ts';
import { rankCandidates, windowSkewMs, type CandidateReport } from './exchange-candidates.ts';
import { listExchangeOrders } from './exchange-listing.ts';
import { readFleet } from './fleet-reader.ts';
import {
  prepare,
  preparedKcatLine,
  refusalOf,
  sendPrepared,
  type PreparedCommand,
  type Resolution,
  type SettleRequest,
} from './operator-commands.ts';
import { settleLine } from './render.ts';

export const fleetCommands = new Set(['list', 'find-exchange-order', 'settle']);

export const fleetUsage = `fleet commands:
  list [--state parked|open|active|finished|<machine state>] [--stalled 1h] [--older-than 10m] [--mode cefi] [--limit N] [--json]
      orders by state, oldest first (--stalled D: open orders, not parked, unchanged for D)
  find-exchange-order <order_id> [--json]
      the exchange orders (GET /orders/, CeFi) that could be this parked order's, with the evidence, the pick, and
      the settle command for it (needs EXCHANGE_API_URL and the mode's EXCHANGE_API_KEY_*)
  settle <order_id> adopt <unique_reference> | abandon [--seq N] [--note TEXT] [--dry-run]
  settle --file <plan | list.json | -> [adopt-picked | abandon] [--dry-run]
      bulk: a plan has one "<order_id> <seq> adopt <ref>" or "<order_id> <seq> abandon" per line (or the JSON
      lines of find-exchange-order --json .settle); a list --json document takes the resolution after it.
      An order whose seq differs from the one listed, or that is not parked, is refused; the rest are sent.
  settle signs with OPERATOR_KEY_FILE / OPERATOR_KEY_ID (the worker refuses unsigned operator commands)`;

interface Context {
  json: boolean;
  now: number;
}

function age(since: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(since)) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7_200) return `${Math.round(s / 60)} min`;
  return `${(s / 3_600).toFixed(1)} h`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function renderList(orders: readonly OrderSummary[], now: number): string {
  if (orders.length === 0) return '(no order matches)';
  return table([
    ['order_id', 'mode', 'state', 'seq', 'since', 'age', 'reference', 'exchange', 'parked reason'],
    ...orders.map((o) => [
      o.order_id,
      o.mode,
      o.state,
      String(o.seq),
      o.since,
      age(o.since, now),
      o.unique_reference ?? '-',
      o.exchange_status ?? '-',
      o.parked ? `${o.parked.reason}${o.parked.last_failure ? ` (${o.parked.last_failure.code})` : ''}` : '-',
    ]),
  ]);
}

function parsePlanLine(line: string): SettleRequest | string {
  const text = line.trim();
  if (text.startsWith('{')) {
    try {
      const json = JSON.parse(text) as Record<string, unknown>;
      const orderId = typeof json['order_id'] === 'string' ? json['order_id'] : '';
      const seq = typeof json['seq'] === 'number' ? json['seq'] : undefined;
      if (json['resolution'] === 'abandon' && orderId)
        return { orderId, seq, settle: { resolution: 'abandon' } };
      if (json['resolution'] === 'adopt' && orderId && typeof json['unique_reference'] === 'string')
        return { orderId, seq, settle: { resolution: 'adopt', uniqueReference: json['unique_reference'] } };
    } catch {
      /* reported below */
    }
    return `not a settle line: ${text.slice(0, 120)}`;
  }
  const [orderId, seqText, resolution, reference, ...rest] = text.split(/\s+/);
  const seq = seqText === '-' ? undefined : Number(seqText);
  if (!orderId || (seq !== undefined && !Number.isSafeInteger(seq)) || rest.length)
    return `not "<order_id> <seq|-> adopt <ref>" nor "<order_id> <seq|-> abandon": ${text.slice(0, 120)}`;
  if (resolution === 'abandon' && reference === undefined)
    return { orderId, seq, settle: { resolution: 'abandon' } };
  if (resolution === 'adopt' && reference)
    return { orderId, seq, settle: { resolution: 'adopt', uniqueReference: reference } };
  return `not "<order_id> <seq|-> adopt <ref>" nor "<order_id> <seq|-> abandon": ${text.slice(0, 120)}`;
}

/** The requests of a bulk file: a plan (text or JSON lines), or a `list --json` document with one resolution. */
export function readSettleFile(
  text: string,
  resolution: string | undefined,
): { requests: SettleRequest[]; problems: string[] } {
  const problems: string[] = [];
  const trimmed = text.trim();
  if (trimmed.startsWith('{') && trimmed.includes('"orders"')) {
    let listed: { orders?: Array<{ order_id?: unknown; seq?: unknown }> };
    try {
      listed = JSON.parse(trimmed) as typeof listed;
    } catch (error) {
      return { requests: [], problems: [`not a list --json document: ${(error as Error).message}`] };
    }
    if (resolution !== 'abandon')
      return {
        requests: [],
        problems: [
          'a list --json document settles every order it lists one way: add "abandon" after the file',
        ],
      };
    const requests = (listed.orders ?? []).flatMap((o): SettleRequest[] =>
      typeof o.order_id === 'string' && typeof o.seq === 'number'
        ? [{ orderId: o.order_id, seq: o.seq, settle: { resolution: 'abandon' } }]
        : [],
    );
    return { requests, problems };
  }
  const requests: SettleRequest[] = [];
  for (const line of trimmed.split('\n')) {
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    const parsed = parsePlanLine(line);
    if (typeof parsed === 'string') problems.push(parsed);
    else requests.push(parsed);
  }
  return { requests, problems };
}

export async function runFleetCommand(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  let args;
  try {
    args = parseArgs({
      args: rest,
      options: {
        state: { type: 'string' },
        stalled: { type: 'string' },
        'older-than': { type: 'string' },
        mode: { type: 'string' },
        limit: { type: 'string' },
        json: { type: 'boolean' },
        seq: { type: 'string' },
        note: { type: 'string' },
        file: { type: 'string' },
        'dry-run': { type: 'boolean' },
      },
      allowPositionals: true,
    });
  } catch (error) {
    console.error(`inspect ${name}: ${(error as Error).message}\n${fleetUsage}`);
    return 2;
  }
  let config;
  let tools;
  try {
    config = loadOperatorConfig(process.env);
    tools = loadOperatorToolConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) console.error(`config: ${problem}`);
    return 2;
  }
  const logger = createLogger({ level: 'error', name: 'inspect', destination: pino.destination(2) });
  const kafka = createKafka({
    clientId: 'exchange-order-inspect',
    brokers: [...config.kafkaBrokers],
    logger,
    security: config.security.kafka,
  });
  const ctx: Context = { json: args.values.json === true, now: Date.now() };
  const read = async (): Promise<FleetView> => {
    const { view, incomplete } = await readFleet(kafka, config.topics.state);
    for (const problem of incomplete) console.error(`inspect: incomplete read: ${problem}`);
    return view;
  };

  if (name === 'list') {
    const stalled = args.values.stalled;
    if (stalled !== undefined && parseDuration(stalled) === undefined) {
      console.error(`inspect list: --stalled ${stalled}: must be a duration such as 30m, 1h or 2d`);
      return 2;
    }
    const query = listQuerySchema.safeParse({
      ...(stalled !== undefined ? { state: 'active', older_than: stalled } : {}),
      ...(args.values.state !== undefined ? { state: args.values.state } : {}),
      ...(args.values['older-than'] !== undefined ? { older_than: args.values['older-than'] } : {}),
      ...(args.values.mode !== undefined ? { mode: args.values.mode } : {}),
      limit: args.values.limit ?? '1000',
    });
    if (!query.success) {
      for (const issue of query.error.issues)
        console.error(`inspect list: ${issue.path.join('.')}: ${issue.message}`);
      return 2;
    }
    const view = await read();
    const orders: OrderSummary[] = [];
    let cursor: [string, string] | undefined;
    // Every page: the inspector shows the whole answer (--limit caps it).
    for (;;) {
      const page = view.list({ ...query.data, ...(cursor ? { cursor } : {}) }, ctx.now);
      orders.push(...page.orders);
      const last = page.orders.at(-1);
      // --limit N: the first N; without it, every page.
      if (!page.next_cursor || !last || args.values.limit !== undefined) break;
      cursor = [last.since, last.order_id];
    }
    if (ctx.json)
      console.log(JSON.stringify({ listed_at: new Date(ctx.now).toISOString(), orders }, null, 2));
    else console.log(renderList(orders, ctx.now));
    return 0;
  }

  if (name === 'find-exchange-order') {
    const id = args.positionals[0];
    if (id === undefined || args.positionals.length > 1) {
      console.error(fleetUsage);
      return 2;
    }
    const view = await read();
    const order = view.find(id);
    if (!order) {
      console.error(`inspect find-exchange-order: no order "${id}" in ${config.topics.state}`);
      return 1;
    }
    if (order.phase !== 'parked') {
      console.error(
        `inspect find-exchange-order: order ${order.order_id} is not parked (state ${order.state})`,
      );
      return 1;
    }
    if (order.mode === 'defi') {
      console.error(
        `inspect find-exchange-order: ${order.order_id} is a DeFi order; GET /orders/ lists CeFi orders only. The worker re-checks it by repeating its POST with rate_id ${order.parked?.rate_id ?? '?'}; look it up in the partner dashboard, then: ${settleLine(order.order_id, true, ` --seq ${order.seq}`)}`,
      );
      return 1;
    }
    const mode = order.mode as 'cefi' | 'cefi_fixed';
    const credentials = tools.exchange?.credentials ?? {};
    if (!tools.exchange || credentials[mode] === undefined) {
      console.error(
        `inspect find-exchange-order: needs EXCHANGE_API_URL and EXCHANGE_API_KEY_${mode.toUpperCase()} (the worker's)`,
      );
      return 2;
    }
    const client = new ExchangeClient({ baseUrl: tools.exchange.baseUrl, credentials });
    let listed;
    try {
      listed = await listExchangeOrders(
        client,
        mode,
        Date.parse(order.parked?.window_from ?? '') - windowSkewMs,
      );
    } catch (error) {
      console.error(`inspect find-exchange-order: GET /orders/ failed: ${(error as Error).message}`);
      return 1;
    } finally {
      await client.close();
    }
    const report = rankCandidates(order, listed.orders, (reference) => {
      const owner = view.find(reference);
      return owner?.unique_reference === reference ? owner.order_id : undefined;
    });
    const settle: Resolution | null = report.pick
      ? { resolution: 'adopt', uniqueReference: report.pick.uniqueReference }
      : null;
    const prepared = settle ? prepare(order, settle, tools.signer, ctx.now) : null;
    if (ctx.json) {
      console.log(
        JSON.stringify(
          {
            order,
            listed: listed.orders.length,
            listing_complete: listed.complete,
            ...report,
            settle: settle && {
              order_id: order.order_id,
              seq: order.seq,
              resolution: 'adopt',
              unique_reference: report.pick?.uniqueReference,
            },
            kcat: prepared && preparedKcatLine(prepared, [...config.kafkaBrokers], config.topics.commands),
          },
          null,
          2,
        ),
      );
    } else console.log(renderCandidates(order, report, listed, prepared));
    return 0;
  }

  if (name === 'settle') {
    const dryRun = args.values['dry-run'] === true;
    let requests: SettleRequest[];
    if (args.values.file !== undefined) {
      const file = args.values.file;
      const text = file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
      const read = readSettleFile(text, args.positionals[0]);
      for (const problem of read.problems) console.error(`inspect settle: ${problem}`);
      if (read.problems.length) return 2;
      requests = read.requests;
    } else {
      const [orderId, resolution, reference, ...extra] = args.positionals;
      const seq = args.values.seq === undefined ? undefined : Number(args.values.seq);
      const settle: Resolution | undefined =
        resolution === 'abandon' && reference === undefined
          ? { resolution: 'abandon' }
          : resolution === 'adopt' && reference
            ? { resolution: 'adopt', uniqueReference: reference }
            : undefined;
      if (!orderId || !settle || extra.length || (seq !== undefined && !Number.isSafeInteger(seq))) {
        console.error(fleetUsage);
        return 2;
      }
      requests = [{ orderId, seq, settle }];
    }
    if (!dryRun && !tools.signer)
      console.error(
        'inspect settle: no OPERATOR_KEY_FILE / OPERATOR_KEY_ID: the commands go unsigned, and a worker with OPERATOR_PUBLIC_KEYS refuses them (command.rejected, unauthorized)',
      );
    const view = await read();
    const ready: PreparedCommand[] = [];
    const refused: Array<{ order_id: string; reason: string }> = [];
    for (const request of requests) {
      const current = view.find(request.orderId);
      const refusal = refusalOf(request, current);
      if (refusal || !current) refused.push({ order_id: request.orderId, reason: refusal ?? 'not found' });
      else ready.push(prepare(current, request.settle, tools.signer, ctx.now, args.values.note));
    }
    const failed = dryRun
      ? new Map<string, string>()
      : await sendPrepared(kafka, config.topics.commands, ready);
    const sent = ready.filter((p) => !failed.has(p.orderId));
    for (const [orderId, reason] of failed)
      refused.push({ order_id: orderId, reason: `not written: ${reason}` });
    if (ctx.json)
      console.log(
        JSON.stringify(
          {
            dry_run: dryRun,
            sent: sent.map((p) => ({
              order_id: p.orderId,
              command: p.command,
              signed_by: p.headers['operator-key-id'] ?? null,
            })),
            refused,
          },
          null,
          2,
        ),
      );
    else {
      for (const p of sent) {
        console.log(
          `${dryRun ? 'would send' : 'sent'}  ${p.orderId}  ${p.command['resolution']}${p.command['unique_reference'] ? ` ${p.command['unique_reference']}` : ''}  (${p.command['command_id']}${p.headers['operator-key-id'] ? `, signed by ${p.headers['operator-key-id']}` : ', unsigned'})`,
        );
        if (dryRun) console.log(`  ${preparedKcatLine(p, [...config.kafkaBrokers], config.topics.commands)}`);
      }
      for (const r of refused) console.log(`REFUSED  ${r.order_id}  ${r.reason}`);
      if (!dryRun && sent.length)
        console.log(
          `follow the outcome: npm run -s inspect -- <order_id> --follow (order.created, order.failed or order.settle_refused)`,
        );
    }
    return refused.length ? 1 : 0;
  }
  console.error(fleetUsage);
  return 2;
}

function renderCandidates(
  order: OrderSummary,
  report: CandidateReport,
  listed: { orders: readonly ExchangeOrderView[]; complete: boolean },
  prepared: PreparedCommand | null,
): string {
  const lines: string[] = [];
  const intent = order.intent;
  lines.push(
    `order      ${order.order_id}  (${order.mode}), parked since ${order.parked?.since ?? '?'} (seq ${order.seq})`,
    `asked      ${intent.deposit_amount ?? `? (withdraw ${intent.withdraw_amount ?? '?'})`} ${intent.deposit_currency ?? '?'} -> ${intent.withdraw_currency ?? '?'} to ${intent.withdraw_address ?? '?'}`,
    `window     ${order.parked?.window_from ?? '?'} .. ${order.parked?.window_to ?? '?'} (± ${windowSkewMs / 1000} s)`,
    `listed     ${listed.orders.length} exchange orders (GET /orders/${listed.complete ? ', back to the window' : ', STOPPED at the page cap: older ones not read'}); ${report.candidates.length} of the same pair`,
    '',
  );
  for (const candidate of report.candidates) {
    lines.push(
      `${candidate.matches ? '*' : ' '} ${candidate.uniqueReference}  created ${candidate.createdOn}  ${candidate.status}  deposit ${candidate.depositAmount}  withdraw ${candidate.withdrawAmount}`,
    );
    for (const e of candidate.evidence)
      lines.push(`    ${e.ok ? 'for    ' : 'AGAINST'}  ${e.check}: ${e.detail}`);
  }
  lines.push('', `pick       ${report.pick?.uniqueReference ?? '-'}: ${report.note}`);
  if (prepared && report.pick) {
    lines.push(
      'settle it  (checks the seq is still ' + String(order.seq) + ', signs with OPERATOR_KEY_FILE):',
      `  npm run -s inspect -- settle ${order.order_id} adopt ${report.pick.uniqueReference} --seq ${order.seq}`,
      '  (with --dry-run: the signed kcat line instead; the --json output carries it as "kcat")',
    );
  } else
    lines.push(
      'abandon it (if the exchange holds no order of it):',
      `  npm run -s inspect -- settle ${order.order_id} abandon --seq ${order.seq}`,
    );
  return lines.join('\n');
}
