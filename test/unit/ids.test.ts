import { newId } from '../../src/core/ids.js';

/** Ids take their random bytes from a batch filled ahead (src/core/ids.ts): each byte must serve once. */
describe('newId', () => {
  it('gives a prefix and 32 base32 characters, never the same twice, across many batches', () => {
    const ids = Array.from({ length: 2_000 }, () => newId('cus'));
    for (const id of ids) expect(id).toMatch(/^cus_[a-z2-7]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Neighbours share no run of bytes: a slice handed out twice would repeat whole ids or their halves.
    const halves = new Set(ids.flatMap((id) => [id.slice(4, 20), id.slice(20)]));
    expect(halves.size).toBe(ids.length * 2);
  });
});
