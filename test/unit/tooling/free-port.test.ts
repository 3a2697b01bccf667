// freePort never hands the same port out twice in one process: workers started at once ask for their ports before
// binding them, and the kernel readily hands a just-closed ephemeral port out again (a fault run's worker failed
// with EADDRINUSE on a port another lane's worker had been given).
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../dev/services/process-util.ts';

describe('freePort', () => {
  it('hands out 2000 distinct ports in a row', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 2000; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('hands out ports below the kernel ephemeral range, which outgoing connections never take', async () => {
    // A port of that range, free when picked, was taken by an outgoing connection before a benchmark's worker bound
    // it (EADDRINUSE after 50,000 webhook connections).
    const range = '/proc/sys/net/ipv4/ip_local_port_range';
    expect(existsSync(range), 'this check needs Linux').toBe(true);
    const low = Number(readFileSync(range, 'utf8').trim().split(/\s+/)[0]);
    const ports: number[] = [];
    for (let i = 0; i < 200; i++) ports.push(await freePort());
    expect(ports.filter((port) => port >= low || port < 1024)).toEqual([]);
  });
});
