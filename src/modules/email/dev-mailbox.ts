import { randomUUID } from 'node:crypto';
import type { Logger } from '../../infra/logger.js';
import type { Mailer, MailMessage } from './mailer.js';

export interface StoredMail extends MailMessage {
  readonly id: string;
  readonly from: string;
  readonly createdAt: string;
}

/** Enough history to follow a development session without letting memory grow without bound. */
const CAPACITY = 200;

/**
 * The development stand-in for SMTP: keeps the latest messages in memory for `/dev/mailbox` and logs
 * that a message arrived. The log line names recipient and subject only, never the body, because the
 * body holds a login token and tokens never reach logs.
 */
export class DevMailbox implements Mailer {
  readonly #messages: StoredMail[] = [];

  constructor(
    private readonly from: string,
    private readonly logger: Logger,
    private readonly mailboxUrl: string,
  ) {}

  async send(message: MailMessage): Promise<void> {
    const stored: StoredMail = {
      id: randomUUID(),
      from: this.from,
      to: message.to,
      subject: message.subject,
      text: message.text,
      html: message.html,
      createdAt: new Date().toISOString(),
    };
    this.#messages.unshift(stored);
    this.#messages.length = Math.min(this.#messages.length, CAPACITY);
    this.logger.info(
      { mail: { id: stored.id, to: stored.to, subject: stored.subject } },
      `dev mailbox: new message, read it at ${this.mailboxUrl}`,
    );
  }

  /** Newest first. */
  list(): readonly StoredMail[] {
    return [...this.#messages];
  }

  close(): void {}
}
