import { redisRequirement, requirementMode } from '../helpers/requirements.js';

/** A newcomer's `npm test` skips what the machine lacks; CI (TOLLGATE_REQUIRE_ALL_TESTS=1) fails instead. */
describe('test requirements', () => {
  const missing = { missing: 'no Redis at redis://127.0.0.1:1' };
  it('runs a suite whose requirement is met, whatever the setting', () => {
    expect(requirementMode({ missing: undefined }, {})).toBe('run');
    expect(requirementMode({ missing: undefined }, { TOLLGATE_REQUIRE_ALL_TESTS: '1' })).toBe('run');
  });

  it('skips a suite whose requirement is missing, unless all tests are required: then it fails', () => {
    expect(requirementMode(missing, {})).toBe('skip');
    expect(requirementMode(missing, { TOLLGATE_REQUIRE_ALL_TESTS: '0' })).toBe('skip');
    expect(requirementMode(missing, { TOLLGATE_REQUIRE_ALL_TESTS: '1' })).toBe('fail');
  });

  it('finds no Redis where nothing listens, and says how to provide one', async () => {
    expect(await redisRequirement('redis://127.0.0.1:1')).toEqual({
      missing: 'no Redis at redis://127.0.0.1:1: start redis-server or set TEST_REDIS_URL',
    });
  });
});
