import nodemailer, { type Transporter } from 'nodemailer';
import type { Mailer, MailMessage } from './mailer.js';

/** Sends through an SMTP server given as a URL (`smtp://user:pass@host:587`, `smtps://…`). */
export class SmtpMailer implements Mailer {
  readonly #transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    this.#transport = nodemailer.createTransport(smtpUrl);
  }

  async send(message: MailMessage): Promise<void> {
    await this.#transport.sendMail({
      from: this.from,
      // An address object is never re-parsed as a list, so exactly one recipient is possible.
      to: { name: '', address: message.to },
      subject: message.subject,
      text: message.text,
      html: message.html,
    });
  }

  close(): void {
    this.#transport.close();
  }
}
