import { actionEmail, oneLine } from '../email/action-email.js';
import type { MailMessage } from '../email/mailer.js';

export interface MagicLinkEmailInput {
  readonly to: string;
  readonly appName: string;
  readonly link: string;
  readonly expiryMinutes: number;
}

/** The login e-mail: a plain-text part and an HTML part carrying the same link. */
export function magicLinkEmail(input: MagicLinkEmailInput): MailMessage {
  const subject = `Sign in to ${oneLine(input.appName)}`;
  const minutes = input.expiryMinutes === 1 ? '1 minute' : `${input.expiryMinutes} minutes`;
  return actionEmail({
    to: input.to,
    subject,
    heading: subject,
    instruction: 'Open this link to sign in:',
    buttonLabel: 'Sign in',
    link: input.link,
    notes: [
      // Opening the link does not use it up (mail scanners open links too): signing in with it does.
      `You can open the link until you have signed in with it, for ${minutes} at most.`,
      'If you did not ask to sign in, you can ignore this e-mail.',
    ],
  });
}
