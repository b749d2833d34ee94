import type { Config } from '../../config.js';
import type { Logger } from '../../infra/logger.js';
import { DevMailbox } from './dev-mailbox.js';
import type { Mailer } from './mailer.js';
import { SmtpMailer } from './smtp-mailer.js';

/** SMTP when SMTP_URL is set; otherwise (development only: production requires SMTP_URL) the dev mailbox. */
export function createMailer(config: Config, logger: Logger): Mailer {
  if (config.smtpUrl) return new SmtpMailer(config.smtpUrl, config.mailFrom);
  return new DevMailbox(config.mailFrom, logger, `${config.publicBaseUrl}/dev/mailbox`);
}
