import { chooseLogFormat, createLogger } from '../../src/infra/logger.js';
import { logLines } from '../helpers/log-lines.js';

describe('log format', () => {
  it('is pretty only for development at a terminal, unless LOG_FORMAT says otherwise', () => {
    expect(chooseLogFormat({ requested: undefined, production: false, terminal: true })).toBe('pretty');
    expect(chooseLogFormat({ requested: undefined, production: false, terminal: false })).toBe('json');
    expect(chooseLogFormat({ requested: undefined, production: true, terminal: true })).toBe('json');
    expect(chooseLogFormat({ requested: 'pretty', production: true, terminal: false })).toBe('pretty');
    expect(chooseLogFormat({ requested: 'json', production: false, terminal: true })).toBe('json');
  });

  it('writes one JSON object a line by default', () => {
    const { lines, stream } = logLines();
    createLogger('info', stream).info({ stripeEvent: { type: 'invoice.paid', id: 'evt_1' } }, 'hello');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 30,
      service: 'tollgate',
      msg: 'hello',
      stripeEvent: { type: 'invoice.paid', id: 'evt_1' },
    });
  });

  it('lays the same record out for reading when pretty, secrets still redacted', () => {
    const { lines, stream } = logLines();
    createLogger('info', stream, 'pretty').info({ apiKey: { apiKey: 'tg_sk_secret' }, count: 3 }, 'hello');
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: hello$/);
    expect(lines.join('\n')).toContain('count: 3');
    expect(lines.join('\n')).toContain('[redacted]');
    expect(lines.join('\n')).not.toContain('tg_sk_secret');
    expect(() => JSON.parse(lines[0]!)).toThrow();
  });
});
