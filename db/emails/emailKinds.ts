/** Where an email came from, what kind of mail it is, and where it stands (contract sections 8, 9 and 14). */
export type EmailSource = 'TRANSACTIONAL' | 'CAMPAIGN' | 'WORKFLOW' | 'INBOUND';
export type EmailType = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';
export type EmailStatus = 'QUEUED' | 'SENDING' | 'SENT' | 'DELIVERED' | 'OPENED' | 'CLICKED' | 'BOUNCED' | 'COMPLAINED' | 'FAILED' | 'SUPPRESSED' | 'RECEIVED';
