import { actionEmail, oneLine } from '../email/action-email.js';
import type { MailMessage } from '../email/mailer.js';

export interface InvitationEmailInput {
  readonly to: string;
  readonly appName: string;
  readonly organizationName: string;
  readonly link: string;
  readonly expiresAt: Date;
}

/** The invitation e-mail: a plain-text part and an HTML part carrying the same link. */
export function invitationEmail(input: InvitationEmailInput): MailMessage {
  const subject = `You are invited to join ${oneLine(input.organizationName)} on ${oneLine(input.appName)}`;
  return actionEmail({
    to: input.to,
    subject,
    heading: subject,
    instruction: 'Open this link to accept the invitation and sign in:',
    buttonLabel: 'Accept the invitation',
    link: input.link,
    notes: [
      `The invitation can be accepted until ${input.expiresAt.toUTCString()}.`,
      'If you did not expect this invitation, you can ignore this e-mail.',
    ],
  });
}
