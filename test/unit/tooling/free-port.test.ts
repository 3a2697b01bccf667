// freePort never hands the same port out twice in one process: workers started at once ask for their ports before
// binding them, and the kernel readily hands a just-closed ephemeral port out again (a fault run's worker failed
// with EADDRINUSE on a port another lane's worker had been given).
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../dev/services/process-util.ts';

describe('freePort', () => {
  it('hands out 2000 distinct ports in a row', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 2000; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
  });
});
