"""The TF tutorials' word2vec_basic.py (skip-gram with NCE loss) on the Zen of Python; the data pipeline is
the tutorial's (a vocabulary, `generate_batch` over a sliding window), the graph is copied as written."""

import collections
import math
import random

import numpy as np

from tests.programs.data import zen_text


def build_dataset(words, n_words):
    count = [['UNK', -1]]
    count.extend(collections.Counter(words).most_common(n_words - 1))
    dictionary = {word: i for i, (word, _) in enumerate(count)}
    data = [dictionary.get(word, 0) for word in words]
    reversed_dictionary = dict(zip(dictionary.values(), dictionary.keys()))
    return data, count, dictionary, reversed_dictionary


class Batcher:
    def __init__(self, data):
        self.data, self.index = data, 0

    def generate_batch(self, batch_size, num_skips, skip_window):
        batch = np.ndarray(shape=(batch_size), dtype=np.int32)
        labels = np.ndarray(shape=(batch_size, 1), dtype=np.int32)
        span = 2 * skip_window + 1
        buffer = collections.deque(maxlen=span)
        if self.index + span > len(self.data):
            self.index = 0
        buffer.extend(self.data[self.index:self.index + span])
        self.index += span
        for i in range(batch_size // num_skips):
            context_words = [w for w in range(span) if w != skip_window]
            words_to_use = random.sample(context_words, num_skips)
            for j, context_word in enumerate(words_to_use):
                batch[i * num_skips + j] = buffer[skip_window]
                labels[i * num_skips + j, 0] = buffer[context_word]
            if self.index == len(self.data):
                buffer.extend(self.data[0:span])
                self.index = span
            else:
                buffer.append(self.data[self.index])
                self.index += 1
        self.index = (self.index + len(self.data) - span) % len(self.data)
        return batch, labels


def main(tf):
    random.seed(0)
    words = zen_text().lower().replace(".", " ").replace(",", " ").split()
    vocabulary_size = 60
    data, _, _, reverse_dictionary = build_dataset(words, vocabulary_size)
    batcher = Batcher(data)
    batch_size, embedding_size, skip_window, num_skips, num_sampled = 32, 16, 1, 2, 8
    valid_examples = np.array([1, 2, 3, 4])
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(3)
        with tf.name_scope('inputs'):
            train_inputs = tf.placeholder(tf.int32, shape=[batch_size])
            train_labels = tf.placeholder(tf.int32, shape=[batch_size, 1])
            valid_dataset = tf.constant(valid_examples, dtype=tf.int32)
        with tf.device('/cpu:0'):
            with tf.name_scope('embeddings'):
                embeddings = tf.Variable(tf.random_uniform([vocabulary_size, embedding_size], -1.0, 1.0))
                embed = tf.nn.embedding_lookup(embeddings, train_inputs)
            with tf.name_scope('weights'):
                nce_weights = tf.Variable(tf.truncated_normal([vocabulary_size, embedding_size],
                                                              stddev=1.0 / math.sqrt(embedding_size)))
            with tf.name_scope('biases'):
                nce_biases = tf.Variable(tf.zeros([vocabulary_size]))
        with tf.name_scope('loss'):
            loss = tf.reduce_mean(tf.nn.nce_loss(weights=nce_weights, biases=nce_biases, labels=train_labels,
                                                 inputs=embed, num_sampled=num_sampled,
                                                 num_classes=vocabulary_size))
        with tf.name_scope('optimizer'):
            optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
        normalized_embeddings = embeddings / norm
        valid_embeddings = tf.nn.embedding_lookup(normalized_embeddings, valid_dataset)
        similarity = tf.matmul(valid_embeddings, normalized_embeddings, transpose_b=True)
        init = tf.global_variables_initializer()
    losses = []
    with tf.Session(graph=graph) as session:
        init.run()
        for _ in range(600):
            batch_inputs, batch_labels = batcher.generate_batch(batch_size, num_skips, skip_window)
            _, loss_val = session.run([optimizer, loss],
                                      feed_dict={train_inputs: batch_inputs, train_labels: batch_labels})
            losses.append(loss_val)
        sim = similarity.eval()
        final_embeddings = normalized_embeddings.eval()
    nearest = [reverse_dictionary[int(j)] for j in (-sim[0, :]).argsort()[1:4]]
    return {"first_loss": float(np.mean(losses[:50])), "last_loss": float(np.mean(losses[-50:])),
            "norms": np.linalg.norm(final_embeddings, axis=1), "nearest": nearest}
