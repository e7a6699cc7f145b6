/** The Performance API mark set when the first non-empty table is on screen (the budget test reads it). */
export const FIRST_TABLE_MARK = "plantstore:first-table";
