package toolsearch

// stopWords are English words that say nothing about which tool is meant:
// articles, pronouns, auxiliaries, prepositions, conjunctions (the usual
// list of search engines), and the politeness and filler of a request to
// an agent ("please can you help me"). Words that name an action or a
// thing ("get", "list", "file") are not here: they are what a tool is
// found by, and IDF already weighs how common they are; nor are the
// particles of an action ("shut down", "turn off", "sign out").
var stopWords = setOf(
	// articles, pronouns, determiners
	"a", "an", "the", "this", "that", "these", "those", "it", "its", "itself",
	"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves",
	"you", "your", "yours", "yourself", "yourselves", "he", "him", "his",
	"himself", "she", "her", "hers", "herself", "they", "them", "their",
	"theirs", "themselves", "what", "which", "who", "whom", "whose",
	"some", "any", "each", "every", "either", "neither", "such", "own", "same",
	"other", "another",
	// auxiliaries and modals
	"am", "is", "are", "was", "were", "be", "been", "being", "have", "has",
	"had", "having", "do", "does", "did", "doing", "will", "would", "shall",
	"should", "can", "could", "may", "might", "must", "ought",
	// prepositions and conjunctions
	"of", "at", "by", "for", "with", "about", "against", "between", "into",
	"through", "during", "before", "after", "above", "below", "to", "from",
	"in", "on", "under", "again",
	"further", "then", "once", "and", "but", "if", "or", "because", "as",
	"until", "while", "so", "than", "too", "very", "just", "also", "both",
	"nor", "not", "no", "only", "here", "there", "when", "where", "why",
	"how", "all", "few", "more", "most", "via", "per", "within", "without",
	"upon", "onto", "whether", "yet", "however", "etc", "eg", "ie",
	// contractions, split at the apostrophe
	"don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "wouldn",
	"shouldn", "couldn", "ll", "re", "ve",
	// the filler of a request
	"please", "kindly", "thanks", "thank", "hi", "hello", "hey", "want",
	"wants", "wanted", "need", "needs", "like", "let", "lets", "know",
	"tell", "give", "help", "able", "sure", "ok", "okay",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
