/** One outgoing e-mail: always exactly one recipient, always a plain-text and an HTML part. */
export interface MailMessage {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

/** The port through which the core sends e-mail; the core never imports nodemailer. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}
