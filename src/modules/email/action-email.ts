import { escapeHtml } from '../../core/html.js';
import type { MailMessage } from './mailer.js';

export interface ActionEmailInput {
  readonly to: string;
  readonly subject: string;
  /** The first line of the text part and the HTML part's heading. */
  readonly heading: string;
  /** The text part's line above the link. */
  readonly instruction: string;
  readonly buttonLabel: string;
  readonly link: string;
  /** Sentences under the link (lifetime, what to do if unexpected). */
  readonly notes: readonly string[];
}

/** Operator- or customer-chosen names go into subjects: one line, so they cannot shape the headers. */
export function oneLine(text: string): string {
  return text.replace(/[\r\n\t]+/g, ' ').trim();
}

/**
 * An e-mail whose point is one link (sign in, accept an invitation): a plain-text part and an HTML part
 * with a button, both carrying the same link.
 */
export function actionEmail(input: ActionEmailInput): MailMessage {
  const text = [input.heading, '', input.instruction, '', input.link, '', ...input.notes, ''].join('\n');
  const html = `<!doctype html>
<html lang="en">
<body style="font-family: system-ui, sans-serif; line-height: 1.5">
<h1 style="font-size: 20px">${escapeHtml(input.heading)}</h1>
<p><a href="${escapeHtml(input.link)}" style="display: inline-block; padding: 10px 18px; background: #111; color: #fff; text-decoration: none; border-radius: 6px">${escapeHtml(input.buttonLabel)}</a></p>
<p>Or copy this address into your browser:<br><span style="word-break: break-all">${escapeHtml(input.link)}</span></p>
<p style="color: #555">${escapeHtml(input.notes.join(' '))}</p>
</body>
</html>
`;
  return { to: input.to, subject: input.subject, text, html };
}
