import { describe, expect, it } from 'vitest';
describe('runtime', () => {
  it('runs on the Node.js LTS line the project targets', () => {
    expect(Number(process.versions.node.split('.')[0])).toBe(24);
  });
});
