// A Sentinel of our own making, for tests that need a failover's messages at a chosen moment (a real Sentinel set
// announces +switch-master whenever its election ends): it names the primary it is told to, answers the few
// commands ioredis sends a sentinel, and lets a test hold a lookup's answer or publish on +switch-master.
import net from 'node:net';
import { freePort } from '../../../dev/services/process-util.ts';

type Reply = string | number | null | Error | Reply[];

function encode(reply: Reply): string {
  if (reply === null) return '*-1\r\n';
  if (reply instanceof Error) return `-${reply.message}\r\n`;
  if (typeof reply === 'number') return `:${reply}\r\n`;
  if (typeof reply === 'string') return `$${Buffer.byteLength(reply)}\r\n${reply}\r\n`;
  return `*${reply.length}\r\n${reply.map(encode).join('')}`;
}

/** The complete commands at the start of `buffer` (RESP arrays of bulk strings) and what is left of it. */
function parseCommands(buffer: string): { commands: string[][]; rest: string } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const command = parseOne(buffer, at);
    if (!command) return { commands, rest: buffer.slice(at) };
    commands.push(command.args);
    at = command.end;
  }
}

function parseOne(buffer: string, from: number): { args: string[]; end: number } | undefined {
  const lineEnd = (at: number) => buffer.indexOf('\r\n', at);
  let end = lineEnd(from);
  if (end < 0 || buffer[from] !== '*') return undefined;
  const count = Number(buffer.slice(from + 1, end));
  const args: string[] = [];
  let at = end + 2;
  for (let i = 0; i < count; i++) {
    end = lineEnd(at);
    if (end < 0) return undefined;
    const length = Number(buffer.slice(at + 1, end));
    if (buffer.length < end + 2 + length + 2) return undefined;
    args.push(buffer.slice(end + 2, end + 2 + length));
    at = end + 2 + length + 2;
  }
  return { args, end: at };
}

export interface ScriptedSentinel {
  readonly port: number;
  /** The primary it names from now on. */
  name(port: number): void;
  /** Connections subscribed to +switch-master (ioredis's failover detector). */
  subscribers(): number;
  /**
   * The next lookup of the primary (SENTINEL GET-MASTER-ADDR-BY-NAME) runs `during` before it is answered, and is
   * answered `delayMs` later; resolves once that lookup came.
   */
  duringNextLookup(during: () => void, delayMs: number): Promise<void>;
  /** Publishes +switch-master (`<name> <old ip> <old port> <new ip> <new port>`) to every subscriber. */
  switchMaster(from: number, to: number): void;
  close(): Promise<void>;
}

export async function startScriptedSentinel(opts: {
  name: string;
  primaryPort: number;
}): Promise<ScriptedSentinel> {
  let primaryPort = opts.primaryPort;
  const sockets = new Set<net.Socket>();
  const subscribed = new Set<net.Socket>();
  let nextLookup: { during: () => void; delayMs: number; came: () => void } | undefined;

  const answer = (socket: net.Socket, args: string[]): void => {
    const [command = '', sub = ''] = args.map((arg) => arg.toLowerCase());
    const send = (reply: Reply) => socket.write(encode(reply));
    if (command === 'sentinel' && sub === 'get-master-addr-by-name') {
      const reply = args[2] === opts.name ? ['127.0.0.1', String(primaryPort)] : null;
      const lookup = nextLookup;
      nextLookup = undefined;
      if (!lookup) return void send(reply);
      lookup.during();
      lookup.came();
      setTimeout(
        () => send(args[2] === opts.name ? ['127.0.0.1', String(primaryPort)] : null),
        lookup.delayMs,
      );
      return;
    }
    if (command === 'sentinel' && (sub === 'sentinels' || sub === 'replicas' || sub === 'slaves'))
      return void send([]);
    if (command === 'subscribe') {
      subscribed.add(socket);
      return void send(['subscribe', args[1] ?? '', 1]);
    }
    if (command === 'ping') return void send('PONG');
    if (command === 'client') return void socket.write('+OK\r\n');
    send(new Error(`ERR unknown command '${command}'`));
  };

  const port = await freePort();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      const { commands, rest } = parseCommands(buffer + chunk);
      buffer = rest;
      for (const args of commands) answer(socket, args);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      subscribed.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

  return {
    port,
    name: (to) => {
      primaryPort = to;
    },
    subscribers: () => subscribed.size,
    duringNextLookup: (during, delayMs) =>
      new Promise((came) => {
        nextLookup = { during, delayMs, came };
      }),
    switchMaster(from, to) {
      const message = `${opts.name} 127.0.0.1 ${from} 127.0.0.1 ${to}`;
      for (const socket of subscribed) socket.write(encode(['message', '+switch-master', message]));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
