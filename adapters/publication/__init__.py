"""Publishing numbers: queries, gates, reviews, comparisons and exports."""
