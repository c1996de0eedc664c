/** Every request schema takes addresses and single-line names by the one rule (shared/zodFields.ts, which the dashboard's forms use too). */
export { emailAddress, singleLineString } from '../../shared/zodFields';
