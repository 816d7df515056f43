// The task queue that shares an autotune run out over GPUs: its order and each task's budget.
#include "tuner/task_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace tuned {
namespace {

TEST(TaskQueue, OneTunerGetsTheBudgetLeftOverTheTasksLeftInTheOrderGiven) {
  // As autotune on one GPU always did: (budget - time used) / tasks left.
  TaskQueue queue({1, 8, 2, 8}, /*largest_first=*/false, 40);
  auto a = queue.next();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->task, 0u);
  EXPECT_DOUBLE_EQ(a->budget_s, 10);
  queue.done(*a, 12);  // overran: the others get less
  auto b = queue.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->task, 1u);
  EXPECT_DOUBLE_EQ(b->budget_s, 28.0 / 3);
  queue.done(*b, 1);  // ended early (its space exhausted): the others get more
  auto c = queue.next();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->task, 2u);
  EXPECT_DOUBLE_EQ(c->budget_s, 27.0 / 2);
  queue.done(*c, 13.5);
  auto d = queue.next();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->task, 3u);
  EXPECT_DOUBLE_EQ(d->budget_s, 13.5);
  queue.done(*d, 13.5);
  EXPECT_FALSE(queue.next());
}

TEST(TaskQueue, LargestFirstKeepsTheGivenOrderOfTies) {
  TaskQueue queue({1, 8, 2, 8, 5}, /*largest_first=*/true, 50);
  std::vector<size_t> order;
  while (auto grant = queue.next()) {
    order.push_back(grant->task);
    queue.done(*grant, grant->budget_s);
  }
  EXPECT_EQ(order, (std::vector<size_t>{1, 3, 4, 2, 0}));
}

TEST(TaskQueue, TunersSideBySideGiveEachTaskTheOneGpuShare) {
  // 8 tasks, 120 s on one GPU: 15 s each. Two tuners start two at once and each still gets 15.
  TaskQueue queue(std::vector<double>(8, 1.0), /*largest_first=*/true, 120);
  auto a = queue.next(), b = queue.next();
  ASSERT_TRUE(a && b);
  EXPECT_DOUBLE_EQ(a->budget_s, 15);
  EXPECT_DOUBLE_EQ(b->budget_s, 15);
  queue.done(*a, 15);
  auto c = queue.next();  // b is still under way: its 15 s stay reserved
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(c->budget_s, 15);
  queue.done(*b, 5);  // b left 10 s unused: the five not started share it
  auto d = queue.next();
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(d->budget_s, 17);
}

TEST(TaskQueue, ABudgetSpentStillGivesTheLeastShare) {
  TaskQueue queue({1, 1}, false, 10);
  auto a = queue.next();
  queue.done(*a, 30);
  auto b = queue.next();
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->budget_s, TaskQueue::kMinBudgetS);
}

TEST(TaskQueue, StopHandsOutNothingMore) {
  std::atomic<bool> stop{false};
  TaskQueue queue({1, 1, 1}, false, 30, &stop);
  EXPECT_TRUE(queue.next());
  stop = true;
  EXPECT_FALSE(queue.next());
}

TEST(TaskQueue, ThreadsTakeEachTaskOnce) {
  constexpr size_t kTasks = 1000;
  TaskQueue queue(std::vector<double>(kTasks, 1.0), true, 1000);
  std::vector<std::vector<size_t>> taken(4);
  std::vector<std::thread> threads;
  for (auto& mine : taken) {
    threads.emplace_back([&queue, &mine] {
      while (auto grant = queue.next()) {
        mine.push_back(grant->task);
        queue.done(*grant, 0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::multiset<size_t> all;
  for (const auto& mine : taken) all.insert(mine.begin(), mine.end());
  ASSERT_EQ(all.size(), kTasks);
  for (size_t i = 0; i < kTasks; ++i) EXPECT_EQ(all.count(i), 1u) << i;
}

}  // namespace
}  // namespace tuned
